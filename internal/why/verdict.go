package why

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// pools fills the pools layer and returns the verdict it leads to. The
// closest pool decides: the one whose best node fails the fewest filters
// (a node too small for the pod counts as farthest).
func (e *explainer) pools() Cause {
	results := e.c.pools()
	var growers, atMax []*poolResult
	said := map[string]bool{}
	for _, r := range results {
		e.v.Pools = append(e.v.Pools, r.summary())
		// A pool the autoscaler is growing for this pod grows, even when
		// the node on its way takes it to its maximum.
		adding := r.template != nil && r.template.failures() == 0 && e.s.Autoscaler != nil && e.scalingUp(r.name) != ""
		switch {
		case r.grows() || adding:
			growers = append(growers, r)
			e.add(e.growCause(r))
			said[r.name] = true
		case r.atMax():
			atMax = append(atMax, r)
			e.add(atMaxCause(r))
			said[r.name] = true
		}
	}
	e.v.Causes = append(e.v.Causes, e.autoscalerCauses(said)...)
	e.v.Causes = append(e.v.Causes, e.karpenterCauses()...)
	if len(results) == 0 || results[0].best == nil {
		if len(growers) > 0 {
			return e.canGrow(growers[0], nil)
		}
		return Cause{Layer: LayerPools, Code: CauseNoNodes, Problem: problem.Problem{Message: "the cluster has no nodes",
			Fix: "add nodes: `berth up` starts a local cluster with the blueprint's pools, `berth export` writes them for a cloud"}}
	}
	best := results[0]
	f := best.best
	onlyResources := f.failures() == 1 && len(f.short) > 0
	switch {
	case f.failures() == 0:
		return e.fits(results)
	case onlyResources && !f.tooSmall():
		return e.full(results, growers, atMax)
	case len(growers) > 0:
		return e.canGrow(growers[0], best)
	case onlyResources:
		return e.resourceVerdict(results, e.tooSmallMessage(best), "", growers, atMax)
	case f.failures() > 1:
		c := e.stageVerdict(f.first(), tied(results))
		c.Message += fmt.Sprintf("; and besides, pool %s: %s", best.name, strings.Join(reasonsExcept(best.fits, f.first()), "; "))
		return c
	}
	return e.stageVerdict(f.first(), tied(results))
}

// tied are the pools as close as the closest.
func tied(results []*poolResult) []*poolResult {
	out := []*poolResult{results[0]}
	for _, r := range results[1:] {
		if r.best == nil || !sameRank(r.best, results[0].best) {
			break
		}
		out = append(out, r)
	}
	return out
}

func (e *explainer) stageVerdict(s stage, pools []*poolResult) Cause {
	switch s {
	case stageCordoned:
		var parts []string
		for _, p := range pools {
			var names []string
			for _, f := range p.fits {
				if f.cordoned {
					names = append(names, f.info.node.Name)
				}
			}
			parts = append(parts, fmt.Sprintf("pool %s: %s", p.name, words.List(names, 5)))
		}
		return Cause{Layer: LayerPools, Code: CauseCordoned, Problem: problem.Problem{
			Message: "every node that could hold the pod is cordoned (spec.unschedulable): " + strings.Join(parts, "; "),
			Fix:     "`kubectl uncordon NODE` once its maintenance is over, or wait for the nodes that replace it"}}
	case stageTaints:
		return e.taintVerdict(pools)
	case stageAffinity:
		return e.affinityVerdict(pools[0])
	case stageSpread:
		return e.spreadVerdict(pools[0])
	case stageOther:
		return e.pluginVerdict(pools[0])
	}
	return e.resourceVerdict(pools, e.tooSmallMessage(pools[0]), "", nil, nil)
}

func (e *explainer) taintVerdict(pools []*poolResult) Cause {
	var parts []string
	for _, p := range pools[:min(len(pools), 3)] {
		names := make([]string, len(p.best.taints))
		for i, t := range p.best.taints {
			names[i] = taintString(t)
			if why := conditionTaint(t.Key); why != "" {
				names[i] += " (" + why + ")"
			}
		}
		word := "taint"
		if len(names) > 1 {
			word = "taints"
		}
		parts = append(parts, fmt.Sprintf("pool %s has %s %s", p.name, word, strings.Join(names, ", ")))
	}
	c := Cause{Layer: LayerPools, Code: CauseTaint, Problem: problem.Problem{Message: "no pool tolerates the pod: " + strings.Join(parts, "; ")}}
	p := pools[0]
	var tols []string
	for _, t := range p.best.taints {
		if conditionTaint(t.Key) != "" {
			c.Fix = fmt.Sprintf("the nodes of pool %s are not healthy (%s): fix or replace them; a toleration would only hide it", p.name, taintString(t))
			return c
		}
		tols = append(tols, tolerationFor(t))
	}
	c.Fix = fmt.Sprintf("add to the pod's spec.tolerations %s (pool %s)", strings.Join(tols, ", "), p.name)
	if cls := e.classesFor(p.name); len(cls) > 0 {
		c.Fix += fmt.Sprintf(", or label the workload berth.io/class=%s: the class gives it the tolerations and node affinity of its pools", strings.Join(cls, " or berth.io/class="))
	}
	if note := e.gpuNamespaceNote(p); note != "" {
		c.Fix += "; " + note
	}
	return c
}

// conditionTaint explains a taint the node lifecycle puts on unhealthy
// nodes, or is "" for any other.
func conditionTaint(key string) string {
	switch key {
	case corev1.TaintNodeNotReady:
		return "the node is not Ready"
	case corev1.TaintNodeUnreachable:
		return "the node is unreachable"
	case corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure:
		return "the node is under pressure"
	case corev1.TaintNodeNetworkUnavailable:
		return "the node's network is not ready"
	case corev1.TaintNodeUnschedulable:
		return "the node is cordoned"
	}
	return ""
}

func (e *explainer) affinityVerdict(p *poolResult) Cause {
	var parts []string
	poolKey := false
	for _, u := range p.best.unmet {
		parts = append(parts, fmt.Sprintf("%s: nodes have %s", u.what, e.valuesOf(u.key)))
		poolKey = poolKey || contains(pools.PoolLabels, u.key)
	}
	c := Cause{Layer: LayerPools, Code: CauseNodeAffinity, Problem: problem.Problem{
		Message: "no node matches the pod's node selector or required node affinity: " + strings.Join(parts, "; ")}}
	if poolKey {
		c.Fix = fmt.Sprintf("select one of the pools (%s), or add the pool to the blueprint and `berth apply`", strings.Join(e.s.index().poolNames, ", "))
	} else {
		c.Fix = "change spec.nodeSelector or spec.affinity to a value the nodes have, or give a pool's nodes that label (blueprint pools[].labels)"
	}
	return c
}

// valuesOf is "KEY=a, b, c" over every node, and how many lack the key.
func (e *explainer) valuesOf(key string) string {
	seen := map[string]bool{}
	var vals []string
	without := 0
	for _, n := range e.s.index().nodes {
		v, ok := n.node.Labels[key]
		if !ok {
			without++
			continue
		}
		if !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	sort.Strings(vals)
	if len(vals) == 0 {
		return "no " + key + " label at all"
	}
	s := key + "=" + words.List(vals, 8)
	if without > 0 {
		s += fmt.Sprintf(" (%s without it)", words.Count(without, "node"))
	}
	return s
}

// pluginFixes say what to do when a plugin other than the common ones
// rejects the pod.
var pluginFixes = map[string]string{
	names.InterPodAffinity:   "change the pod's required pod (anti-)affinity, or move the pods it must keep away from (or run those it must be near) so that a node qualifies",
	names.NodePorts:          "free the host port on a node, or drop hostPort from the pod's containers",
	names.NodeName:           "drop spec.nodeName, or name a node that exists and fits",
	names.VolumeRestrictions: "check the pod's volumes: the claim must exist, and a ReadWriteOncePod claim may be used by one pod only",
	names.NodeVolumeLimits:   "the nodes have attached as many volumes of the claim's driver as their CSINode allows: let the pool grow (a new node attaches its own), raise the class's maxVolumesPerNode in the blueprint's spec.storage.classes if the machine allows, or end pods that hold volumes there",
	names.VolumeZone:         "the pod can only run in its volume's zone: give a pool of the pod's class nodes in that zone (one pool per zone lets the autoscaler grow just that zone), or restore the volume's data to a new claim elsewhere",
}

// pluginVerdict quotes a Filter plugin berth has no numbers for.
func (e *explainer) pluginVerdict(p *poolResult) Cause {
	o := p.best.other[0]
	c := Cause{Layer: LayerPools, Code: CauseFilter, Problem: problem.Problem{
		Message: fmt.Sprintf("pool %s: the scheduler's %s filter rejects the pod: %s", p.name, o.Plugin, strings.Join(o.Reasons, "; ")),
		Fix:     pluginFixes[o.Plugin]}}
	switch o.Plugin {
	case names.InterPodAffinity:
		c.Code = CausePodAffinity
	case names.NodeVolumeLimits:
		c.Code = CauseAttachLimit
	case names.VolumeZone:
		c.Code = CauseVolumeZone
	}
	if c.Fix == "" {
		c.Fix = "see the scheduler's reason above"
	}
	return c
}

func (e *explainer) spreadVerdict(p *poolResult) Cause {
	m := p.best.spread[0]
	c := Cause{Layer: LayerPools, Code: CauseSpread, Problem: problem.Problem{Message: fmt.Sprintf("pool %s: %s", p.name, m.String())}}
	if m.scheduler {
		c.Fix = "raise maxSkew, or set whenUnsatisfiable: ScheduleAnyway, or wait for matching pods to land in the emptier domains"
		return c
	}
	if m.missing {
		c.Fix = fmt.Sprintf("label pool %s's nodes with %s (blueprint pools[].labels), or spread over a key they have", p.name, m.key)
		return c
	}
	if d := m.sc.minDomain; d != "" && !e.reachable(m.key, d) {
		c.Message += fmt.Sprintf("; no node in %s passes the pod's other filters, so the skew cannot shrink by itself", d)
		c.Fix = fmt.Sprintf("let the pod reach %s (its node selector or affinity keeps it out; nodeAffinityPolicy Ignore still counts that domain), raise maxSkew, or set whenUnsatisfiable: ScheduleAnyway", d)
		return c
	}
	c.Fix = "wait for matching pods to land in the emptier domains, raise maxSkew, or set whenUnsatisfiable: ScheduleAnyway"
	return c
}

// reachable reports whether some node in the domain passes every filter
// but spread.
func (e *explainer) reachable(key, domain string) bool {
	for _, n := range e.s.index().nodes {
		if n.node.Labels[key] != domain {
			continue
		}
		f := e.c.fit(n)
		if f.failures() == 0 || (f.failures() == 1 && f.first() == stageSpread) {
			return true
		}
	}
	return false
}

func (e *explainer) fits(results []*poolResult) Cause {
	var parts []string
	for _, r := range results {
		if r.fitOK > 0 {
			parts = append(parts, fmt.Sprintf("pool %s: %d of %d", r.name, r.fitOK, len(r.fits)))
		}
	}
	msg := "berth finds room: nodes pass every Filter plugin of the scheduler's simulation: " + strings.Join(parts, ", ")
	code := CauseFits
	if s := e.v.Scheduler; s != nil && s.Message != "" {
		msg += "; the scheduler last said: " + s.Message
	} else {
		msg += "; the scheduler has not reported on the pod yet"
	}
	return Cause{Layer: LayerScheduler, Code: code, Problem: problem.Problem{Message: msg,
		Fix: "wait for the scheduler's next attempt; if the pod stays Pending, the scheduler's message names what the simulation leaves out (volume binding, volume zones and limits, dynamic resources)"}}
}

// tooSmallMessage says which requests no node could hold even empty.
func (e *explainer) tooSmallMessage(p *poolResult) string {
	var parts []string
	for _, s := range p.best.short {
		var biggest *nodeInfo
		var most resource.Quantity
		for _, n := range e.s.index().nodes {
			if a := n.node.Status.Allocatable[s.name]; biggest == nil || a.Cmp(most) > 0 {
				biggest, most = n, a
			}
		}
		if s.requested.Cmp(most) <= 0 {
			continue
		}
		if most.IsZero() {
			parts = append(parts, fmt.Sprintf("%s requested %s, and no node has any", s.name, quantity(s.name, s.requested)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s requested %s, the largest allocatable is %s (node %s, pool %s)", s.name, quantity(s.name, s.requested), quantity(s.name, most), biggest.node.Name, biggest.pool))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("no single node is big enough; the closest, pool %s: %s", p.name, strings.Join(reasons(p.fits), "; "))
	}
	return "no node is big enough for the pod: " + strings.Join(parts, "; ")
}
