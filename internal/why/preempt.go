package why

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// priority is the pod's priority, its class and preemption policy.
func (c *check) priorityInfo() *Priority {
	p := &Priority{Value: c.priority, Class: c.pod.Spec.PriorityClassName, PreemptionPolicy: string(corev1.PreemptLowerPriority)}
	if pp := c.pod.Spec.PreemptionPolicy; pp != nil {
		p.PreemptionPolicy = string(*pp)
	}
	return p
}

// neverPreempts is true when the pod may not evict others.
func (c *check) neverPreempts() bool {
	pp := c.pod.Spec.PreemptionPolicy
	return pp != nil && *pp == corev1.PreemptNever
}

// neverSource says who set preemptionPolicy Never: its PriorityClass, or
// the pod itself.
func (c *check) neverSource() string {
	for i := range c.snap.PriorityClasses {
		pc := &c.snap.PriorityClasses[i]
		if pc.Name == c.pod.Spec.PriorityClassName && pc.PreemptionPolicy != nil && *pc.PreemptionPolicy == corev1.PreemptNever {
			return fmt.Sprintf("PriorityClass %s, value %d, sets preemptionPolicy Never", pc.Name, pc.Value)
		}
	}
	return "the pod's spec.preemptionPolicy is Never"
}

// preemption is the room evicting lower-priority pods would make on one
// node, as DefaultPreemption picks victims: all lower-priority pods
// removed, then as many reprieved as still leave room, those whose
// eviction would break a PodDisruptionBudget first.
type preemption struct {
	node    *nodeInfo
	victims []*corev1.Pod
	// budgets are the PDBs that allow no disruption and cover a victim.
	budgets []string
	// violating counts the victims those budgets cover.
	violating int
}

// preempt finds the best node to preempt on among those that fail on
// resources alone, or nil when evicting lower-priority pods frees none.
func (c *check) preempt(candidates []*nodeFit) *preemption {
	var best *preemption
	for _, f := range candidates {
		p := c.preemptOn(f)
		if p == nil {
			continue
		}
		if best == nil || betterPreemption(p, best) {
			best = p
		}
	}
	return best
}

func betterPreemption(a, b *preemption) bool {
	if a.violating != b.violating {
		return a.violating < b.violating
	}
	ha, hb := highest(a.victims), highest(b.victims)
	if ha != hb {
		return ha < hb
	}
	if len(a.victims) != len(b.victims) {
		return len(a.victims) < len(b.victims)
	}
	return a.node.node.Name < b.node.node.Name
}

func highest(pods []*corev1.Pod) int32 {
	h := int32(-1 << 31)
	for _, p := range pods {
		h = max(h, corev1helpers.PodPriority(p))
	}
	return h
}

// preemptOn picks victims on one node as DefaultPreemption does: every
// lower-priority pod removed, then, the most important first, each put
// back while the pod still fits. Whether it fits is the scheduler's
// Filter plugins' answer on the node without those pods.
func (c *check) preemptOn(f *nodeFit) *preemption {
	n := f.info
	var lower []*corev1.Pod
	for _, p := range n.pods {
		if corev1helpers.PodPriority(p) < c.priority {
			lower = append(lower, p)
		}
	}
	if len(lower) == 0 || c.err != nil {
		return nil
	}
	ctx := context.Background()
	t, err := c.snap.index().sim.Trial(ctx, c.pod, n.node.Name)
	if err != nil {
		return nil
	}
	for _, p := range lower {
		if t.Remove(ctx, p) != nil {
			return nil
		}
	}
	if ok, err := t.Fits(ctx); err != nil || !ok {
		return nil
	}
	// The most important pods are reprieved first: higher priority, then
	// the longest running.
	sort.SliceStable(lower, func(i, j int) bool {
		pi, pj := corev1helpers.PodPriority(lower[i]), corev1helpers.PodPriority(lower[j])
		if pi != pj {
			return pi > pj
		}
		ti, tj := startTime(lower[i]), startTime(lower[j])
		return ti.Before(&tj)
	})
	violating, others, budgets := c.budgetsCovering(lower)
	p := &preemption{node: n}
	reprieve := func(pod *corev1.Pod, breaks bool) error {
		if err := t.Add(ctx, pod); err != nil {
			return err
		}
		ok, err := t.Fits(ctx)
		if err != nil || ok {
			return err
		}
		if err := t.Remove(ctx, pod); err != nil {
			return err
		}
		p.victims = append(p.victims, pod)
		if breaks {
			p.violating++
			for _, b := range budgets[pod] {
				if !contains(p.budgets, b) {
					p.budgets = append(p.budgets, b)
				}
			}
		}
		return nil
	}
	for _, pod := range violating {
		if reprieve(pod, true) != nil {
			return nil
		}
	}
	for _, pod := range others {
		if reprieve(pod, false) != nil {
			return nil
		}
	}
	sort.Strings(p.budgets)
	return p
}

// budgetsCovering splits pods into those whose eviction would break a
// PodDisruptionBudget (one that allows no more disruptions) and the
// rest, and names the budgets.
func (c *check) budgetsCovering(pods []*corev1.Pod) (violating, others []*corev1.Pod, budgets map[*corev1.Pod][]string) {
	allowed := make([]int32, len(c.snap.PDBs))
	selectors := make([]labels.Selector, len(c.snap.PDBs))
	for i := range c.snap.PDBs {
		allowed[i] = c.snap.PDBs[i].Status.DisruptionsAllowed
		sel, err := metav1.LabelSelectorAsSelector(c.snap.PDBs[i].Spec.Selector)
		if err != nil || sel.Empty() {
			sel = labels.Nothing()
		}
		selectors[i] = sel
	}
	budgets = map[*corev1.Pod][]string{}
	for _, p := range pods {
		breaks := false
		for i := range c.snap.PDBs {
			pdb := &c.snap.PDBs[i]
			if pdb.Namespace != p.Namespace || !selectors[i].Matches(labels.Set(p.Labels)) {
				continue
			}
			if allowed[i] <= 0 {
				breaks = true
				budgets[p] = append(budgets[p], pdb.Namespace+"/"+pdb.Name)
				continue
			}
			allowed[i]--
		}
		if breaks {
			violating = append(violating, p)
		} else {
			others = append(others, p)
		}
	}
	return violating, others, budgets
}

func startTime(p *corev1.Pod) metav1.Time {
	if p.Status.StartTime != nil {
		return *p.Status.StartTime
	}
	return p.CreationTimestamp
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// victimNames are NAMESPACE/NAME (priority N) for each victim.
func victimNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = fmt.Sprintf("%s/%s (priority %d)", p.Namespace, p.Name, corev1helpers.PodPriority(p))
	}
	return out
}
