package karpenter

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/export"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/problem"
)

// instanceType is one instance type Karpenter may launch, and the pools
// whose shape it has: every User pool whose `berth export --target
// karpenter` instance type it is.
type instanceType struct {
	*cloudprovider.InstanceType
	// pools are the pools of this type, by name.
	pools map[string]*v1alpha1.Pool
}

// InstanceTypes are the instance types of bp's User pools as Karpenter
// sees them: named as `berth export --target karpenter` names the pool's
// machine on AWS (so the exported NodePools' requirements select them),
// with the capacity of the pool's nodes (CPU, memory, pods, GPUs) less
// what they reserve as overhead, and an offering per zone of the pool
// in its capacity type (spot or on-demand) at the pool's price from
// berth's price table (`pools[].price`, else the table's AWS row), so
// Karpenter's cheapest fit is the rehearsal's. Pools that share an
// instance type share one entry and add their offerings to it; they must
// then have the same machine. A pool without a price is a problem:
// Karpenter chooses by price, and berth makes none up.
func InstanceTypes(bp *v1alpha1.Blueprint, table *prices.Table) ([]*cloudprovider.InstanceType, error) {
	types, err := instanceTypes(bp, table)
	if err != nil {
		return nil, err
	}
	return karpenterTypes(types), nil
}

// karpenterTypes are the instance types as Karpenter takes them.
func karpenterTypes(types []*instanceType) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, len(types))
	for i, t := range types {
		out[i] = t.InstanceType
	}
	return out
}

func instanceTypes(bp *v1alpha1.Blueprint, table *prices.Table) ([]*instanceType, error) {
	priced := prices.Price(bp, table, prices.AWS)
	byName := map[string]*instanceType{}
	var names []string
	var probs problem.List
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if p.Mode == v1alpha1.ModeSystem {
			continue
		}
		name, err := export.InstanceType(bp, i, export.Karpenter)
		if err != nil {
			return nil, err
		}
		pp := priced[i]
		if pp.Problem != nil {
			probs = append(probs, *pp.Problem)
			continue
		}
		price := pp.OnDemand
		if p.Capacity == v1alpha1.Spot {
			price = pp.Spot
		}
		node := pools.NewNode(bp, p, 0)
		t, ok := byName[name]
		switch {
		case !ok:
			t = &instanceType{
				InstanceType: &cloudprovider.InstanceType{
					Name:     name,
					Capacity: node.Status.Capacity,
					Overhead: &cloudprovider.InstanceTypeOverhead{KubeReserved: overhead(node)},
				},
				pools: map[string]*v1alpha1.Pool{},
			}
			byName[name] = t
			names = append(names, name)
		case !equality.Semantic.DeepEqual(t.Capacity, node.Status.Capacity):
			probs = append(probs, problem.Problem{
				Object:  problem.Object{Kind: "Pool", Name: p.Name},
				Field:   fmt.Sprintf("spec.pools[%d].machine", i),
				Message: fmt.Sprintf("the pool's instance type on AWS is %s, as another pool's is, but its machine differs: Karpenter knows one shape per instance type", name),
				Fix:     "give the pools the same machine, or name a different type in machine.instanceTypes",
			})
			continue
		}
		t.pools[p.Name] = p
		for _, z := range p.Zones {
			t.Offerings = append(t.Offerings, &cloudprovider.Offering{
				Requirements: scheduling.NewRequirements(
					scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, z),
					scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityType(p)),
				),
				Price:     float64(price.Micros()) / 1e6,
				Available: true,
			})
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	sort.Strings(names)
	out := make([]*instanceType, len(names))
	for i, name := range names {
		t := byName[name]
		var zones, capacity, oses []string
		for _, o := range t.Offerings {
			zones = append(zones, o.Requirements.Get(corev1.LabelTopologyZone).Values()...)
			capacity = append(capacity, o.Requirements.Get(karpv1.CapacityTypeLabelKey).Values()...)
		}
		for _, p := range t.pools {
			oses = append(oses, strings.ToLower(string(p.OS)))
		}
		t.Requirements = scheduling.NewRequirements(
			scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, oses...),
			scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...),
			scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacity...),
		)
		out[i] = t
	}
	return out, nil
}

// overhead is what a pool's node reserves: its capacity less its
// allocatable.
func overhead(n *corev1.Node) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, c := range n.Status.Capacity {
		a := n.Status.Allocatable[name]
		if c.Cmp(a) > 0 {
			d := c.DeepCopy()
			d.Sub(a)
			out[name] = d
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// capacityType is the pool's karpenter.sh/capacity-type.
func capacityType(p *v1alpha1.Pool) string {
	if p.Capacity == v1alpha1.Spot {
		return karpv1.CapacityTypeSpot
	}
	return karpv1.CapacityTypeOnDemand
}
