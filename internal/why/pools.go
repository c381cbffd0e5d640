package why

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/simulate"
	"berth.io/berth/internal/words"
)

// poolResult is how one pool fares: its nodes, the closest of them, and
// from the blueprint whether it could grow.
type poolResult struct {
	name  string
	fits  []nodeFit
	best  *nodeFit // nil for a pool with no nodes
	spec  *v1alpha1.Pool
	fitOK int
	// template is a new node of the pool, from the blueprint; growth is
	// how many nodes it may add (MaxSize less its nodes).
	template *nodeFit
	growth   int
}

// pools groups the nodes' verdicts by pool, closest pool first.
// Blueprint pools are tried on their next node too (the autoscaler's
// template node), so that a pool that could grow, or scale from zero, is
// found.
func (c *check) pools() (out []*poolResult) {
	ix := c.snap.index()
	key, shared := equivalenceKey(c.pod)
	if shared && c.err == nil {
		ix.mu.Lock()
		d, ok := ix.diagnoses[key]
		ix.mu.Unlock()
		if ok && d.pools != nil {
			c.err = d.poolsErr
			return d.pools
		}
		defer func() {
			ix.mu.Lock()
			d := ix.diagnoses[key]
			d.pools, d.poolsErr = out, c.err
			ix.diagnoses[key] = d
			ix.mu.Unlock()
		}()
	}
	out = c.poolsOnce()
	return out
}

func (c *check) poolsOnce() []*poolResult {
	ix := c.snap.index()
	var out []*poolResult
	byName := map[string]*poolResult{}
	for _, name := range ix.poolNames {
		p := &poolResult{name: name}
		for _, n := range ix.byPool[name] {
			f := c.fit(n)
			if f.first() == stageFits {
				p.fitOK++
			}
			p.fits = append(p.fits, f)
		}
		for i := range p.fits {
			if p.best == nil || closer(&p.fits[i], p.best) {
				p.best = &p.fits[i]
			}
		}
		out = append(out, p)
		byName[name] = p
	}
	if bp := c.snap.Blueprint; bp != nil && c.err == nil {
		for i := range bp.Spec.Pools {
			spec := &bp.Spec.Pools[i]
			p, ok := byName[spec.Name]
			if !ok {
				p = &poolResult{name: spec.Name}
				out = append(out, p)
			}
			p.spec = spec
			p.growth = max(int(spec.MaxSize())-len(p.fits), 0)
			if st, ok := c.snap.autoscaled(spec.Name); ok && spec.Autoscale != nil {
				// The autoscaler's target counts the nodes on their way.
				p.growth = max(st.max-max(st.target, len(p.fits)), 0)
			}
			d, err := ix.sim.DiagnoseTemplate(context.Background(), c.pod, simulate.PoolTemplate(bp, defaulted(bp, spec), len(p.fits)))
			if err != nil {
				c.err = err
				continue
			}
			t := c.fitOf(&nodeInfo{node: d.Node, pool: spec.Name}, &d)
			p.template = &t
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return poolCloser(out[i], out[j]) })
	return out
}

// defaulted is the pool with the zones and maxPods its nodes get when
// the blueprint leaves them out.
func defaulted(bp *v1alpha1.Blueprint, spec *v1alpha1.Pool) *v1alpha1.Pool {
	p := *spec
	if len(p.Zones) == 0 {
		p.Zones = bp.Spec.Zones
	}
	if len(p.Zones) == 0 {
		p.Zones = []string{"zone-1"}
	}
	if p.MaxPods == 0 {
		p.MaxPods = 110
	}
	return &p
}

func poolCloser(a, b *poolResult) bool {
	switch {
	case a.best == nil && b.best == nil:
		return a.name < b.name
	case a.best == nil || b.best == nil:
		return a.best != nil
	case !sameRank(a.best, b.best):
		return closer(a.best, b.best)
	default:
		return a.name < b.name
	}
}

// grows is true when the pool may add a node and that node would hold
// the pod.
func (p *poolResult) grows() bool {
	return p.template != nil && p.growth > 0 && p.template.failures() == 0
}

// atMax is true when a new node would hold the pod but the pool may not
// add one.
func (p *poolResult) atMax() bool {
	return p.template != nil && p.growth == 0 && p.template.failures() == 0
}

func (p *poolResult) size() string {
	switch {
	case p.spec == nil:
		return ""
	case p.spec.Autoscale != nil:
		return fmt.Sprintf("%d-%d", p.spec.MinSize(), p.spec.MaxSize())
	default:
		return fmt.Sprint(p.spec.MaxSize())
	}
}

// sizeWords is "autoscale 0-2" or "count 3".
func (p *poolResult) sizeWords() string {
	if p.spec != nil && p.spec.Autoscale != nil {
		return "autoscale " + p.size()
	}
	return "count " + p.size()
}

// summary is the pool's row of the report.
func (p *poolResult) summary() PoolFit {
	pf := PoolFit{Name: p.name, Nodes: len(p.fits), Fits: p.fitOK, Size: p.size()}
	switch {
	case p.best != nil:
		pf.Stage = p.best.firstName()
	case p.template != nil && p.template.failures() == 0:
		pf.Stage = stageFits.String()
	case p.template != nil:
		pf.Stage = p.template.firstName()
	}
	pf.Reasons = reasons(p.fits)
	pf.Filters = filterCounts(p.fits)
	if len(p.fits) == 0 && p.template != nil {
		pf.Filters = filterCounts([]nodeFit{*p.template})
	}
	if len(p.fits) == 0 && p.template != nil {
		if p.template.failures() == 0 {
			pf.Reasons = []string{fmt.Sprintf("no nodes; a new node would fit (%s)", p.sizeWords())}
		} else {
			pf.Reasons = []string{"no nodes; a new node would not fit either: " + strings.Join(templateReasons(p.template), "; ")}
		}
	}
	return pf
}

// filterCounts are the plugins' reasons over nodes, with node counts,
// in the order first seen.
func filterCounts(fits []nodeFit) []string {
	var order []string
	count := map[string]int{}
	for i := range fits {
		for _, fl := range fits[i].failed {
			for _, r := range fl.Reasons {
				k := fl.Plugin + ": " + r
				if count[k] == 0 {
					order = append(order, k)
				}
				count[k]++
			}
		}
	}
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("%s (%s)", k, words.Count(count[k], "node")))
	}
	return out
}

// reasons groups nodes' failures, filter by filter, with node counts.
func reasons(fits []nodeFit) []string {
	return reasonsExcept(fits, 0)
}

// reasonsExcept is reasons without those of one filter.
func reasonsExcept(fits []nodeFit, skip stage) []string {
	type group struct {
		text  string
		nodes int
	}
	var order []string
	groups := map[string]*group{}
	add := func(s stage, key, text string) {
		if s == skip {
			return
		}
		g, ok := groups[key]
		if !ok {
			g = &group{text: text}
			groups[key] = g
			order = append(order, key)
		}
		g.nodes++
	}
	shorts := map[corev1.ResourceName]*shortSummary{}
	for i := range fits {
		f := &fits[i]
		if f.cordoned {
			add(stageCordoned, "cordon", "cordoned (spec.unschedulable)")
		}
		if len(f.taints) > 0 {
			names := make([]string, len(f.taints))
			for j, t := range f.taints {
				names[j] = taintString(t)
			}
			word := "taint"
			if len(names) > 1 {
				word = "taints"
			}
			add(stageTaints, "taint "+strings.Join(names, ","), "untolerated "+word+" "+strings.Join(names, ", "))
		}
		for _, u := range f.unmet {
			add(stageAffinity, "unmet "+u.what, unmetText(f.info.node, u))
		}
		for _, sh := range f.short {
			if skip == stageResources {
				break
			}
			sum, ok := shorts[sh.name]
			if !ok {
				sum = &shortSummary{name: sh.name, requested: sh.requested}
				shorts[sh.name] = sum
				order = append(order, "short "+string(sh.name))
			}
			sum.add(f.info.node.Name, sh)
		}
		for _, m := range f.spread {
			if m.missing {
				add(stageSpread, "spread-missing "+m.key, m.String())
			} else {
				add(stageSpread, "spread "+m.key+" "+m.domain, m.String())
			}
		}
		for _, o := range f.other {
			text := o.Plugin + ": " + strings.Join(o.Reasons, "; ")
			add(stageOther, "other "+text, text)
		}
	}
	out := make([]string, 0, len(order))
	for _, key := range order {
		if name, ok := strings.CutPrefix(key, "short "); ok {
			out = append(out, "insufficient "+shorts[corev1.ResourceName(name)].String())
			continue
		}
		g := groups[key]
		out = append(out, words.Count(g.nodes, "node")+": "+g.text)
	}
	return out
}

// templateReasons say why a pool's next node would not hold the pod.
func templateReasons(f *nodeFit) []string {
	var out []string
	if len(f.taints) > 0 {
		names := make([]string, len(f.taints))
		for i, t := range f.taints {
			names[i] = taintString(t)
		}
		out = append(out, "untolerated "+strings.Join(names, ", "))
	}
	for _, u := range f.unmet {
		out = append(out, unmetText(f.info.node, u))
	}
	for _, s := range f.short {
		out = append(out, fmt.Sprintf("%s: requested %s, a new node has %s", s.name, quantity(s.name, s.requested), quantity(s.name, s.allocatable)))
	}
	for _, m := range f.spread {
		out = append(out, m.String())
	}
	for _, o := range f.other {
		out = append(out, o.Plugin+": "+strings.Join(o.Reasons, "; "))
	}
	return out
}

// unmetText is "nodeSelector K=V not matched (K=W)"; the scheduler's
// words alone when berth cannot tell which part failed.
func unmetText(n *corev1.Node, u unmet) string {
	if u.key == "" {
		return u.what
	}
	return u.what + " not matched (" + labelOf(n, u.key) + ")"
}

func labelOf(n *corev1.Node, key string) string {
	if v, ok := n.Labels[key]; ok {
		return key + "=" + v
	}
	return "no " + key + " label"
}

// shortSummary is one resource's shortage over several nodes.
type shortSummary struct {
	name               corev1.ResourceName
	requested          resource.Quantity
	nodes              []string
	minFree, maxFree   resource.Quantity
	minAlloc, maxAlloc resource.Quantity
	maxFreeNode        string
}

func (s *shortSummary) add(node string, sh shortage) {
	if len(s.nodes) == 0 {
		s.minFree, s.maxFree, s.minAlloc, s.maxAlloc, s.maxFreeNode = sh.free, sh.free, sh.allocatable, sh.allocatable, node
	}
	s.nodes = append(s.nodes, node)
	if sh.free.Cmp(s.maxFree) > 0 {
		s.maxFree, s.maxFreeNode = sh.free, node
	}
	if sh.free.Cmp(s.minFree) < 0 {
		s.minFree = sh.free
	}
	if sh.allocatable.Cmp(s.maxAlloc) > 0 {
		s.maxAlloc = sh.allocatable
	}
	if sh.allocatable.Cmp(s.minAlloc) < 0 {
		s.minAlloc = sh.allocatable
	}
}

// String is "nvidia.com/gpu: requested 1, free 0 of 1 on each of 2 nodes".
func (s *shortSummary) String() string {
	q := func(v resource.Quantity) string { return quantity(s.name, v) }
	head := fmt.Sprintf("%s: requested %s, ", s.name, q(s.requested))
	if len(s.nodes) == 1 {
		return head + fmt.Sprintf("free %s of %s on %s", q(s.maxFree), q(s.maxAlloc), s.nodes[0])
	}
	if s.minFree.Cmp(s.maxFree) == 0 && s.minAlloc.Cmp(s.maxAlloc) == 0 {
		return head + fmt.Sprintf("free %s of %s on each of %d nodes", q(s.maxFree), q(s.maxAlloc), len(s.nodes))
	}
	alloc := q(s.maxAlloc)
	if s.minAlloc.Cmp(s.maxAlloc) != 0 {
		alloc = q(s.minAlloc) + "-" + alloc
	}
	return head + fmt.Sprintf("free at most %s (%s) of %s on %d nodes", q(s.maxFree), s.maxFreeNode, alloc, len(s.nodes))
}
