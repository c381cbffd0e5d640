package why

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// full is the verdict when the closest pool's nodes pass every filter
// but resources: the pool is full.
func (e *explainer) full(results []*poolResult, growers, atMax []*poolResult) Cause {
	best := results[0]
	sums := map[corev1.ResourceName]*shortSummary{}
	var order []corev1.ResourceName
	for i := range best.fits {
		f := &best.fits[i]
		if f.failures() != 1 || len(f.short) == 0 {
			continue
		}
		for _, s := range f.short {
			if _, ok := sums[s.name]; !ok {
				sums[s.name] = &shortSummary{name: s.name, requested: s.requested}
				order = append(order, s.name)
			}
			sums[s.name].add(f.info.node.Name, s)
		}
	}
	parts := make([]string, len(order))
	for i, name := range order {
		parts[i] = sums[name].String()
		e.add(e.heldBy(best, name))
	}
	head := fmt.Sprintf("pool %s is full: %s", best.name, strings.Join(parts, "; "))
	return e.resourceVerdict(tied(results), head, e.preemption(results), growers, atMax)
}

// heldBy says which pods hold a resource on the pool's full nodes, the
// largest requests first: what would have to go for the pod to fit.
func (e *explainer) heldBy(p *poolResult, name corev1.ResourceName) *Cause {
	if name == corev1.ResourcePods {
		return nil
	}
	type held struct {
		pod *corev1.Pod
		q   resource.Quantity
	}
	var hs []held
	for i := range p.fits {
		f := &p.fits[i]
		if f.failures() != 1 || len(f.short) == 0 {
			continue
		}
		for _, pod := range f.info.pods {
			if q := podRequests(pod)[name]; q.Sign() > 0 {
				hs = append(hs, held{pod, q})
			}
		}
	}
	if len(hs) == 0 {
		return nil
	}
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].q.Cmp(hs[j].q) > 0 })
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = fmt.Sprintf("%s/%s (%s, priority %d)", h.pod.Namespace, h.pod.Name, quantity(name, h.q), corev1helpers.PodPriority(h.pod))
	}
	return &Cause{Layer: LayerPools, Code: CauseHeldBy, Problem: problem.Problem{Message: fmt.Sprintf("%s on pool %s is held by %s", name, p.name, words.List(names, 4))}}
}

// resourceVerdict is an insufficient-resources verdict: head says what
// is short; then LimitRange defaults that caused it, preemption, and
// whether the pool could grow.
func (e *explainer) resourceVerdict(pools []*poolResult, head, preempt string, growers, atMax []*poolResult) Cause {
	best := pools[0]
	c := Cause{Layer: LayerPools, Code: CauseResources, Problem: problem.Problem{Message: head}}
	var fixes []string
	if set := e.defaultsBehind(best.best.short); len(set) > 0 {
		c.Code = CauseLimitRange
		c.Layer = LayerLimitRange
		var what, res []string
		for _, d := range set {
			what = append(what, fmt.Sprintf("%s request %s on %s", d.Resource, d.Value, d.Container))
			if !contains(res, d.Resource) {
				res = append(res, d.Resource)
			}
		}
		c.Message = fmt.Sprintf("LimitRange %s set %s (the pod asked for none), and %s", set[0].LimitRange, strings.Join(what, ", "), head)
		fix := fmt.Sprintf("set resources.requests (%s) on the container to what it needs, or lower the LimitRange's defaultRequest", strings.Join(res, ", "))
		if t := teamOf(e.s.Blueprint, e.pod.Namespace); t != nil {
			fix += fmt.Sprintf(" (blueprint: team %s's defaults)", t.Name)
		}
		fixes = append(fixes, fix)
	}
	if preempt != "" {
		c.Message += "; " + preempt
	}
	var raise string
	for _, m := range atMax {
		if m.name == best.name {
			c.Message += fmt.Sprintf("; pool %s is at its maximum of %s (%s)", m.name, words.Count(int(m.spec.MaxSize()), "node"), m.sizeWords())
			raise = fmt.Sprintf("raise pool %s's %s in the blueprint", m.name, map[bool]string{true: "autoscale.max", false: "count"}[m.spec.Autoscale != nil])
		}
	}
	if len(growers) > 0 {
		g := growers[0]
		c.Message += "; " + e.growText(g)
		fixes = append(fixes, e.growFix(g))
	}
	if raise != "" {
		fixes = append(fixes, raise)
	}
	if !best.best.tooSmall() {
		if e.c.neverPreempts() && e.c.preempt(e.resourceOnly([]*poolResult{best})) != nil {
			fixes = append(fixes, "give the pod a PriorityClass that may preempt (preemptionPolicy PreemptLowerPriority)")
		}
		fixes = append(fixes, fmt.Sprintf("free room in pool %s (delete or finish pods there)", best.name))
	}
	fixes = append(fixes, "lower the pod's requests")
	c.Fix = strings.Join(fixes, "; or ")
	return c
}

// defaultsBehind are the LimitRange defaults behind every shortage, or
// nil when the pod's own requests are (part of) what does not fit.
func (e *explainer) defaultsBehind(short []shortage) []Default {
	byRes := defaultedRequests(e.v.Defaults)
	var out []Default
	for _, s := range short {
		ds, ok := byRes[s.name]
		if !ok {
			return nil
		}
		out = append(out, ds...)
	}
	return out
}

// resourceOnly are the nodes that fail on resources alone and are big
// enough: the nodes preemption could help on.
func (e *explainer) resourceOnly(results []*poolResult) []*nodeFit {
	var out []*nodeFit
	for _, r := range results {
		for i := range r.fits {
			f := &r.fits[i]
			if f.failures() == 1 && len(f.short) > 0 && !f.tooSmall() {
				out = append(out, f)
			}
		}
	}
	return out
}

// preemption adds the priority layer's finding and returns the words
// the verdict quotes.
func (e *explainer) preemption(results []*poolResult) string {
	candidates := e.resourceOnly(results)
	p := e.c.preempt(candidates)
	if e.c.neverPreempts() {
		msg := fmt.Sprintf("preemption is off: %s, so the pod waits", e.c.neverSource())
		if p != nil {
			msg += fmt.Sprintf(" rather than evict %s on node %s", words.List(victimNames(p.victims), 3), p.node.node.Name)
		}
		e.add(&Cause{Layer: LayerPriority, Code: CausePreemptNever, Problem: problem.Problem{Message: msg,
			Fix: "wait for room, or run it with a PriorityClass whose preemptionPolicy is PreemptLowerPriority"}})
		return msg
	}
	if p == nil {
		msg := fmt.Sprintf("preemption cannot help: evicting every pod of priority below %d on those nodes would not make room", e.c.priority)
		e.add(&Cause{Layer: LayerPriority, Code: CausePreemptNoHelp, Problem: problem.Problem{Message: msg}})
		return msg
	}
	msg := fmt.Sprintf("preemption could make room on node %s by evicting %s: %s", p.node.node.Name, words.Count(len(p.victims), "lower-priority pod"), words.List(victimNames(p.victims), 3))
	e.add(&Cause{Layer: LayerPriority, Code: CausePreemptPossible, Problem: problem.Problem{Message: msg}})
	if len(p.budgets) > 0 {
		pdb := fmt.Sprintf("PodDisruptionBudget %s covers %s and allows no disruption: the scheduler prefers victims that break no budget, and breaks one only when nothing else makes room", strings.Join(p.budgets, ", "), words.Count(p.violating, "victim"))
		e.add(&Cause{Layer: LayerPriority, Code: CausePDB, Problem: problem.Problem{Message: pdb,
			Fix: "let the budget allow a disruption (more replicas, or a lower minAvailable), or make room elsewhere"}})
		msg += "; PDBs in the way: " + strings.Join(p.budgets, ", ")
	}
	return msg
}

// canGrow is the verdict when no node holds the pod but a pool could add
// one that would.
func (e *explainer) canGrow(g, closest *poolResult) Cause {
	msg := "no node can hold the pod now, but " + e.growText(g)
	if closest != nil {
		msg += fmt.Sprintf("; the closest existing pool, %s: %s", closest.name, strings.Join(reasons(closest.fits), "; "))
	}
	return Cause{Layer: LayerAutoscale, Code: CausePoolCanGrow, Problem: problem.Problem{Message: msg, Fix: e.growFix(g)}}
}

func (e *explainer) growCause(g *poolResult) *Cause {
	return &Cause{Layer: LayerAutoscale, Code: CausePoolCanGrow, Problem: problem.Problem{Message: e.growText(g), Fix: e.growFix(g)}}
}

func atMaxCause(m *poolResult) *Cause {
	return &Cause{Layer: LayerAutoscale, Code: CausePoolAtMax, Problem: problem.Problem{
		Message: fmt.Sprintf("pool %s is at its maximum of %s (%s); a new node would hold the pod", m.name, words.Count(int(m.spec.MaxSize()), "node"), m.sizeWords()),
		Fix:     fmt.Sprintf("raise pool %s's maximum in the blueprint", m.name)}}
}

// growText says how the pool could grow, and who would grow it: the
// autoscaler, when its status shows it runs (and whether it is adding
// the node already), or nobody on a local cluster where it does not.
func (e *explainer) growText(g *poolResult) string {
	s := fmt.Sprintf("pool %s could grow from %d to %s (%s), and a new node would hold the pod", g.name, len(g.fits), words.Count(int(g.spec.MaxSize()), "node"), g.sizeWords())
	switch {
	case g.spec.Autoscale == nil && e.s.Local:
		return s + "; `berth apply` adds it (the autoscaler manages autoscale pools only)"
	case g.spec.Autoscale == nil:
		return s + ", if the pool is resized"
	case e.s.Autoscaler != nil:
		if up := e.scalingUp(g.name); up != "" {
			return s + "; " + up
		}
		if _, ok := e.s.autoscaled(g.name); !ok {
			return s + ", but the cluster's autoscaler does not manage the pool (it is not in cluster-autoscaler-status)"
		}
		return s + ", and the autoscaler that manages it adds one on its next scan"
	case e.s.Local:
		return s + ", but the autoscaler is not running on this local cluster (no kube-system/cluster-autoscaler-status)"
	}
	return s + ", if an autoscaler manages the pool"
}

func (e *explainer) growFix(g *poolResult) string {
	next := len(g.fits) + 1
	switch {
	case g.spec.Autoscale == nil && e.s.Local:
		return fmt.Sprintf("run `berth apply`: it adds pool %s's missing nodes (count %d)", g.name, g.spec.MaxSize())
	case e.s.Autoscaler != nil && e.scalingUp(g.name) != "":
		return fmt.Sprintf("wait for pool %s's new node to be Ready; the scheduler places the pod then", g.name)
	case e.s.Autoscaler != nil && !e.managed(g.name):
		return fmt.Sprintf("`berth apply` the blueprint that has pool %s: the autoscaler manages the pools of the applied blueprint", g.name)
	case e.s.Autoscaler != nil:
		return fmt.Sprintf("wait for the autoscaler's next scan; `kubectl -n kube-system get configmap cluster-autoscaler-status -o yaml` shows pool %s's target", g.name)
	case e.s.Local:
		return fmt.Sprintf("restart the cluster (`berth down`, then `berth up`) so that its autoscaler runs, or rehearse the scale-up by hand: raise pool %s's autoscale.min to %d in the blueprint and run `berth apply`", g.name, next)
	}
	return fmt.Sprintf("a cluster autoscaler that manages pool %s adds a node (up to %d); without one, resize the pool with the cloud's tools (`berth export`)", g.name, g.spec.MaxSize())
}

func (e *explainer) managed(pool string) bool {
	_, ok := e.s.autoscaled(pool)
	return ok
}

// classesFor are the blueprint classes whose label would send the pod to
// the pool: the class mutation gives a pod that asks for GPUs the class's
// GPU pools, and any other pod its pools without GPUs.
func (e *explainer) classesFor(pool string) []string {
	bp := e.s.Blueprint
	if bp == nil || bp.Spec.Guardrails == v1alpha1.GuardrailsOff {
		return nil
	}
	spec := findPool(bp, pool)
	if spec == nil || spec.Mode == v1alpha1.ModeSystem || (spec.GPUResource() != "") != e.asksGPU() {
		return nil
	}
	var out []string
	for _, c := range bp.Spec.Classes {
		if contains(c.Pools, pool) {
			out = append(out, c.Name)
		}
	}
	return out
}

func findPool(bp *v1alpha1.Blueprint, name string) *v1alpha1.Pool {
	for i := range bp.Spec.Pools {
		if bp.Spec.Pools[i].Name == name {
			return &bp.Spec.Pools[i]
		}
	}
	return nil
}

func (e *explainer) asksGPU() bool {
	for i := range e.s.Blueprint.Spec.Pools {
		if r := e.s.Blueprint.Spec.Pools[i].GPUResource(); r != "" {
			if q := e.c.requests[corev1.ResourceName(r)]; q.Sign() > 0 {
				return true
			}
		}
	}
	return false
}

// gpuNamespaceNote warns that the guardrails refuse a GPU pool's
// tolerations in a namespace without a GPU quota.
func (e *explainer) gpuNamespaceNote(p *poolResult) string {
	bp := e.s.Blueprint
	if bp == nil || bp.Spec.Guardrails == v1alpha1.GuardrailsOff || p.spec == nil || p.spec.GPUResource() == "" {
		return ""
	}
	ns := e.pod.Namespace
	if contains(bp.Spec.SystemNamespaces, ns) {
		return ""
	}
	var gpuNS []string
	for _, t := range bp.Spec.Teams {
		if t.Quota == nil || t.Quota.GPU == nil || t.Quota.GPU.Sign() <= 0 {
			continue
		}
		nss := t.Namespaces
		if len(nss) == 0 {
			nss = []string{t.Name}
		}
		gpuNS = append(gpuNS, nss...)
	}
	if contains(gpuNS, ns) {
		return ""
	}
	return fmt.Sprintf("but namespace %s has no GPU quota, and the guardrails (berth/gpu-namespace) allow GPU-pool tolerations only in %s: run it there, or give the team a quota.gpu in the blueprint", ns, strings.Join(gpuNS, ", "))
}
