package audit

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/words"
)

// spotLabels mark spot (or preemptible) nodes on each platform.
var spotLabels = map[string]string{
	v1alpha1.LabelCapacity:        "Spot",
	v1alpha1.LabelCapacityType:    "spot",
	v1alpha1.LabelAKSPriority:     "spot",
	v1alpha1.LabelGKESpot:         "true",
	v1alpha1.LabelGKEPreemptible:  "true",
	v1alpha1.LabelEKSCapacityType: "SPOT",
}

// gpuNodeLabels are set on GPU nodes by the GPU operator, GKE and
// Karpenter; a pod selecting one of them asks for a GPU node.
var gpuNodeLabels = []string{v1alpha1.LabelGPUProduct, v1alpha1.LabelGPUPresent, v1alpha1.LabelGKEAccelerator, v1alpha1.LabelKarpenterGPUCount, v1alpha1.LabelKarpenterGPUName}

// designGPUTaint is the taint berth's design puts on GPU pools.
var designGPUTaint = corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// pool is the nodes sharing a pool label, and what defines them (a
// Karpenter NodePool, an eksctl node group), if audited.
type pool struct {
	name              string
	nodes             []*corev1.Node
	def               *poolDef // what defines the pool, in files
	gpu, system, spot bool
}

// all is the pool's nodes and the node its definition would make.
func (p *pool) all() []*corev1.Node {
	if p.def == nil {
		return p.nodes
	}
	return append([]*corev1.Node{p.def.node}, p.nodes...)
}

// isGPUResource reports whether a resource name is an accelerator.
func isGPUResource(name corev1.ResourceName) bool {
	s := string(name)
	return s == v1alpha1.ResourceNVIDIAGPU || s == "amd.com/gpu" || strings.HasPrefix(s, "nvidia.com/mig-") || strings.HasPrefix(s, "gpu.intel.com/")
}

// isGPUTaint reports whether a taint keeps pods off GPU nodes.
func isGPUTaint(t corev1.Taint) bool {
	if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
		return false
	}
	return strings.Contains(strings.ToLower(t.Key), "gpu") || (t.Key == "sku" && t.Value == "gpu")
}

func isSpotTaint(t corev1.Taint) bool {
	if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
		return false
	}
	v, ok := spotLabels[t.Key]
	return ok && strings.EqualFold(v, t.Value)
}

func (v *view) indexPools() {
	byName := map[string]*pool{}
	zones := map[string]bool{}
	nodes := make([]*corev1.Node, 0, len(v.inv.Nodes))
	for i := range v.inv.Nodes {
		nodes = append(nodes, &v.inv.Nodes[i])
	}
	defs := map[*corev1.Node]*poolDef{}
	for _, d := range v.poolDefs() {
		defs[d.node] = &d
		nodes = append(nodes, d.node)
	}
	for _, n := range nodes {
		name := pools.PoolOf(n)
		if name == "" {
			name = n.Name // a node of no pool is a pool of its own
		}
		p := byName[name]
		if p == nil {
			p = &pool{name: name}
			byName[name] = p
			v.pools = append(v.pools, p)
		}
		if d := defs[n]; d != nil {
			p.def = d
		} else {
			p.nodes = append(p.nodes, n)
		}
		if z := n.Labels[corev1.LabelTopologyZone]; z != "" {
			zones[z] = true
		}
		for r, q := range n.Status.Capacity {
			if isGPUResource(r) && !q.IsZero() {
				p.gpu = true
			}
		}
		for _, l := range gpuNodeLabels {
			if n.Labels[l] != "" && n.Labels[l] != "false" && n.Labels[l] != "0" {
				p.gpu = true
			}
		}
		if strings.EqualFold(n.Labels[v1alpha1.LabelMode], "System") || n.Labels[v1alpha1.LabelAKSMode] == "system" ||
			name == "system" || strings.HasPrefix(name, "system") || strings.HasSuffix(name, "-system") {
			p.system = true
		}
		for k, val := range spotLabels {
			if strings.EqualFold(n.Labels[k], val) {
				p.spot = true
			}
		}
	}
	v.zones = len(zones)
	// Files are decoded on every core, so objects come in any order.
	sort.Slice(v.pools, func(i, j int) bool { return v.pools[i].name < v.pools[j].name })
	for _, p := range v.pools {
		sort.Slice(p.nodes, func(i, j int) bool { return p.nodes[i].Name < p.nodes[j].Name })
	}

	v.gpuPools, v.spotPools = map[string]bool{}, map[string]bool{}
	var found []corev1.Taint
	for _, p := range v.pools {
		if p.gpu {
			v.gpuPools[p.name] = true
			for _, n := range p.all() {
				for _, t := range n.Spec.Taints {
					if isGPUTaint(t) {
						found = appendTaint(found, t)
					}
				}
			}
		}
		if p.spot {
			v.spotPools[p.name] = true
			for _, n := range p.all() {
				for _, t := range n.Spec.Taints {
					if isSpotTaint(t) || (t.Effect == corev1.TaintEffectNoSchedule && strings.Contains(t.Key, "spot")) {
						v.spotTaints = appendTaint(v.spotTaints, t)
					}
				}
			}
		}
	}
	switch {
	case len(v.opts.GPUTaints) > 0:
		v.gpuTaints = v.opts.GPUTaints
	case len(found) > 0:
		v.gpuTaints = found
	default:
		v.gpuTaints = []corev1.Taint{designGPUTaint}
	}
	v.knownGPUTaints = appendTaint(append(append([]corev1.Taint(nil), v.gpuTaints...), found...), designGPUTaint)
	v.knownGPUTaints = appendTaint(v.knownGPUTaints, corev1.Taint{Key: v1alpha1.TaintNVIDIAGPU, Effect: corev1.TaintEffectNoSchedule})
	for k, val := range spotLabels {
		v.spotTaints = appendTaint(v.spotTaints, corev1.Taint{Key: k, Value: val, Effect: corev1.TaintEffectNoSchedule})
	}
}

func appendTaint(ts []corev1.Taint, t corev1.Taint) []corev1.Taint {
	for _, have := range ts {
		if have.Key == t.Key && have.Value == t.Value && have.Effect == t.Effect {
			return ts
		}
	}
	return append(ts, t)
}

// checkPools: GPU pools carry the GPU taint; system pools carry
// CriticalAddonsOnly.
func (v *view) checkPools() {
	criticalAddonsOnly := func(t corev1.Taint) bool {
		return t.Key == v1alpha1.TaintCriticalAddonsOnly && (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute)
	}
	for _, p := range v.pools {
		if d := p.def; d != nil {
			if p.gpu && !hasTaint(d.node, isGPUTaint) {
				t := v.gpuTaints[0]
				v.add(v1alpha1.RuleGPUPoolTaint, d.obj, d.field,
					fmt.Sprintf("%s makes GPU nodes with no GPU taint (%s), so any pod may land on them and hold them", d.what, strings.Join(taintStrings(v.gpuTaints), ", ")),
					fmt.Sprintf("add {key: %s, value: %q, effect: %s} to %s (berth export writes it)", t.Key, t.Value, t.Effect, d.field))
			}
			if p.system && !hasTaint(d.node, criticalAddonsOnly) {
				v.add(v1alpha1.RuleSystemPoolTaint, d.obj, d.field,
					fmt.Sprintf("%s makes system nodes with no CriticalAddonsOnly taint, so application pods can take the room cluster add-ons need", d.what),
					`add {key: CriticalAddonsOnly, value: "true", effect: NoSchedule} to `+d.field)
			}
		}
		if p.gpu {
			if bare := p.without(isGPUTaint); len(bare) > 0 {
				v.add(v1alpha1.RuleGPUPoolTaint, Object{Kind: "Node", Name: bare[0]}, "spec.taints",
					fmt.Sprintf("GPU pool %s: %s of %d node(s) have no GPU taint (%s), so any pod may land on them and hold them", p.name, words.List(bare, 3), len(p.nodes), strings.Join(taintStrings(v.gpuTaints), ", ")),
					fmt.Sprintf("taint pool %s %s (blueprint: pools[].taints; kubectl taint nodes %s %s)", p.name, v.gpuTaints[0].ToString(), bare[0], v.gpuTaints[0].ToString()))
			}
		}
		if p.system {
			if bare := p.without(criticalAddonsOnly); len(bare) > 0 {
				v.add(v1alpha1.RuleSystemPoolTaint, Object{Kind: "Node", Name: bare[0]}, "spec.taints",
					fmt.Sprintf("system pool %s: %s of %d node(s) have no CriticalAddonsOnly taint, so application pods can take the room cluster add-ons need", p.name, words.List(bare, 3), len(p.nodes)),
					fmt.Sprintf("taint pool %s CriticalAddonsOnly=true:NoSchedule (blueprint: pools[].taints; on AKS: --node-taints CriticalAddonsOnly=true:NoSchedule)", p.name))
			}
		}
	}
}

// without names the pool's nodes that carry no taint match accepts.
func (p *pool) without(match func(corev1.Taint) bool) []string {
	var bare []string
	for _, n := range p.nodes {
		if !hasTaint(n, match) {
			bare = append(bare, n.Name)
		}
	}
	return bare
}

func hasTaint(n *corev1.Node, match func(corev1.Taint) bool) bool {
	for _, t := range n.Spec.Taints {
		if match(t) {
			return true
		}
	}
	return false
}

func taintStrings(ts []corev1.Taint) []string {
	out := make([]string, len(ts))
	for i := range ts {
		out[i] = ts[i].ToString()
	}
	return out
}
