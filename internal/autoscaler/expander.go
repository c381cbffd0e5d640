package autoscaler

import (
	"fmt"
	"strings"

	"k8s.io/component-helpers/resource"

	"berth.io/berth/api/v1alpha1"
)

// expand picks the option to carry out with the profile's expander
// chain, as cluster-autoscaler chains expanders: each keeps the options
// it ranks best and hands them to the next; random breaks what ties
// remain. It returns the pick and a sentence saying how it was made.
func (c *Controller) expand(v *view, opts []*option) (*option, string) {
	chain := v.profile.ExpanderChain()
	if len(chain) == 0 || chain[len(chain)-1] != v1alpha1.ExpanderRandom {
		chain = append(chain, v1alpha1.ExpanderRandom)
	}
	left := opts
	var steps []string
	for _, e := range chain {
		if len(left) == 1 {
			break
		}
		before := len(left)
		switch e {
		case v1alpha1.ExpanderRandom:
			left = []*option{left[c.rand.IntN(len(left))]}
		case v1alpha1.ExpanderMostPods:
			left = best(left, func(o *option) float64 { return float64(len(o.packing.Placements)) })
		case v1alpha1.ExpanderLeastWaste:
			left = best(left, func(o *option) float64 { return -waste(o) })
		case v1alpha1.ExpanderPriority:
			left = best(left, func(o *option) float64 { return float64(o.g.pool.Autoscale.Priority) })
		}
		steps = append(steps, fmt.Sprintf("%s kept %d of %d", e, len(left), before))
	}
	pick := left[0]
	if len(opts) == 1 {
		return pick, fmt.Sprintf("pool %s was the only pool that could hold them", pick.g.name())
	}
	var others []string
	for _, o := range opts {
		if o != pick {
			others = append(others, o.g.name())
		}
	}
	return pick, fmt.Sprintf("expander %s chose pool %s over %s (%s)", v.profile.Expander, pick.g.name(), strings.Join(others, ", "), strings.Join(steps, ", "))
}

// best keeps the options of the highest score.
func best(opts []*option, score func(*option) float64) []*option {
	var out []*option
	var top float64
	for i, o := range opts {
		s := score(o)
		switch {
		case i == 0 || s > top:
			out, top = []*option{o}, s
		case s == top:
			out = append(out, o)
		}
	}
	return out
}

// waste is cluster-autoscaler's least-waste score: the share of the new
// nodes' CPU plus the share of their memory that the pods placed on
// them would leave unrequested.
func waste(o *option) float64 {
	if o.packing.Nodes == 0 {
		return 0
	}
	tmpl := o.g.next(1)[0]
	var cpu, mem int64
	for _, p := range o.packing.Placements {
		req := resource.PodRequests(p.Pod, resource.PodResourcesOptions{})
		cpu += req.Cpu().MilliValue()
		mem += req.Memory().Value()
	}
	n := int64(o.packing.Nodes)
	allocCPU := tmpl.Status.Allocatable.Cpu().MilliValue() * n
	allocMem := tmpl.Status.Allocatable.Memory().Value() * n
	share := func(used, total int64) float64 {
		if total <= 0 {
			return 0
		}
		return float64(total-used) / float64(total)
	}
	return share(cpu, allocCPU) + share(mem, allocMem)
}
