package autoscaler

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/simulate"
)

// candidate is an unneeded node whose pods could all move.
type candidate struct {
	g     *group
	node  *corev1.Node
	pods  []*corev1.Pod // the pods that must move: no DaemonSet or mirror pods
	since time.Time
	util  string
}

// scaleDown finds the unneeded nodes and, once they have been unneeded
// for scaleDownUnneededTime and no cooldown holds, removes them: empty
// ones in bulk, one non-empty one (drained in the background).
func (c *Controller) scaleDown(ctx context.Context, v *view, res *scanResult) error {
	// The simulation (a snapshot of every pod) is built for the first
	// node under its threshold: a scan of pools all busy, or of none
	// that autoscales, builds none.
	var sim *simulate.Simulator
	budgets := newBudgetCounter(v.budgets)
	removals := map[*group]int{}
	seen := map[string]bool{}
	var cands []*candidate
	for _, g := range v.groups {
		if !g.autoscaled() {
			continue
		}
		for _, n := range g.nodes {
			if g.removing[n.Name] || n.DeletionTimestamp != nil || hasTaint(n, v1alpha1.TaintToBeDeleted) || !isReady(n) || hasTaint(n, v1alpha1.TaintSpotInterruption) {
				continue
			}
			seen[n.Name] = true
			util, share, threshold := utilization(v, g, n)
			if share >= threshold {
				delete(c.unneeded, n.Name)
				c.keep(ctx, n, "")
				continue
			}
			pods := podsToMove(v, n)
			if sim == nil {
				var err error
				if sim, err = v.simulation(ctx, false); err != nil {
					return err
				}
			}
			if p := c.unremovable(ctx, v, sim, g, n, pods, budgets, removals[g]); p != nil {
				// Events and the status ConfigMap hold text: the
				// problem as String writes it, its fix on a line of
				// its own.
				why := p.String()
				delete(c.unneeded, n.Name)
				c.keep(ctx, n, why)
				res.blocked(g, n.Name+": "+why)
				continue
			}
			removals[g]++
			c.keep(ctx, n, "")
			since, ok := c.unneeded[n.Name]
			if !ok {
				since = v.now
				c.unneeded[n.Name] = since
			}
			cands = append(cands, &candidate{g: g, node: n, pods: pods, since: since, util: util})
		}
	}
	for name := range c.unneeded {
		if !seen[name] {
			delete(c.unneeded, name)
		}
	}
	res.candidates = cands
	if hold := c.cooldown(v); hold != "" {
		res.cooldown = hold
		return nil
	}
	var empty, full []*candidate
	for _, cd := range cands {
		if v.now.Sub(cd.since) < v.profile.ScaleDownUnneededTime.Duration {
			continue
		}
		if len(cd.pods) == 0 {
			empty = append(empty, cd)
		} else {
			full = append(full, cd)
		}
	}
	if len(empty) > 0 {
		c.removeEmpty(ctx, v, empty[:min(len(empty), int(*v.profile.MaxEmptyBulkDelete))])
		return nil
	}
	if len(full) > 0 {
		sort.SliceStable(full, func(i, j int) bool { return full[i].since.Before(full[j].since) })
		c.removeDrained(ctx, v, full[0])
	}
	return nil
}

// cooldown is why scale-down waits this scan, or "".
func (c *Controller) cooldown(v *view) string {
	p := v.profile
	switch {
	case !*p.ScaleDownEnabled:
		return "scale-down is disabled (scaleDownEnabled: false)"
	case c.draining != "":
		return "node " + c.draining + " is being drained"
	case !c.lastScaleUp.IsZero() && v.now.Sub(c.lastScaleUp) < p.ScaleDownDelayAfterAdd.Duration:
		return fmt.Sprintf("a scale-up %s ago (scaleDownDelayAfterAdd %s)", since(v.now, c.lastScaleUp), p.ScaleDownDelayAfterAdd.Duration)
	case !c.lastScaleDown.IsZero() && v.now.Sub(c.lastScaleDown) < p.ScaleDownDelayAfterDelete.Duration:
		return fmt.Sprintf("a node removed %s ago (scaleDownDelayAfterDelete %s)", since(v.now, c.lastScaleDown), p.ScaleDownDelayAfterDelete.Duration)
	case !c.lastFailure.IsZero() && v.now.Sub(c.lastFailure) < p.ScaleDownDelayAfterFailure.Duration:
		return fmt.Sprintf("a failed scale-down %s ago (scaleDownDelayAfterFailure %s)", since(v.now, c.lastFailure), p.ScaleDownDelayAfterFailure.Duration)
	}
	return ""
}

// unremovable is why node must stay, in cluster-autoscaler's terms (its
// reason code in parentheses), with the fix; nil when it could go. A
// node that could go leaves the simulation, its pods where they moved.
func (c *Controller) unremovable(ctx context.Context, v *view, sim *simulate.Simulator, g *group, n *corev1.Node, pods []*corev1.Pod, budgets *budgetCounter, planned int) *problem.Problem {
	p := v.profile
	if n.Annotations[v1alpha1.AnnotationScaleDownDisabled] == "true" {
		return problem.New("remove the annotation to let it go",
			fmt.Sprintf("the node has the annotation %s: \"true\" (ScaleDownDisabledAnnotation)", v1alpha1.AnnotationScaleDownDisabled))
	}
	if g.target()-planned <= g.min() {
		return problem.New("lower autoscale.min in the blueprint",
			fmt.Sprintf("pool %s is at its minimum of %d (NodeGroupMinSizeReached)", g.name(), g.min()))
	}
	for _, pod := range pods {
		ref := pod.Namespace + "/" + pod.Name
		safe := pod.Annotations[v1alpha1.AnnotationSafeToEvict]
		switch {
		case safe == "false":
			return problem.New("remove it if the pod may move",
				fmt.Sprintf("pod %s has the annotation %s: \"false\" (NotSafeToEvictAnnotation)", ref, v1alpha1.AnnotationSafeToEvict))
		case safe == "true":
			continue
		case metav1.GetControllerOf(pod) == nil:
			return problem.New(fmt.Sprintf("run it under a Deployment, StatefulSet or Job, or annotate it %s: \"true\"", v1alpha1.AnnotationSafeToEvict),
				fmt.Sprintf("pod %s has no controller, so nothing would recreate it (NotReplicated)", ref))
		case pod.Namespace == metav1.NamespaceSystem && *p.SkipNodesWithSystemPods && !budgets.covers(pod):
			return problem.New(fmt.Sprintf("give it a PodDisruptionBudget, or annotate it %s: \"true\"", v1alpha1.AnnotationSafeToEvict),
				fmt.Sprintf("pod %s is a kube-system pod without a PodDisruptionBudget (UnmovableKubeSystemPod)", ref))
		}
		if vol := localVolume(pod); vol != "" && *p.SkipNodesWithLocalStorage {
			return problem.New(fmt.Sprintf("annotate it %s: \"true\" if the data may be lost, or set skipNodesWithLocalStorage: false", v1alpha1.AnnotationSafeToEvict),
				fmt.Sprintf("pod %s uses local storage (volume %s) (LocalStorageRequested)", ref, vol))
		}
	}
	if pdb := budgets.take(pods); pdb != "" {
		return problem.New("wait for its pods to be Ready, or relax the budget",
			fmt.Sprintf("PodDisruptionBudget %s allows no more disruptions now (NotEnoughPdb)", pdb))
	}
	_, stuck, err := sim.TryRemove(ctx, n.Name, pods)
	if err != nil {
		return &problem.Problem{Message: fmt.Sprintf("simulating the removal failed: %v", err), Err: err}
	}
	if len(stuck) > 0 {
		budgets.give(pods)
		s := stuck[0]
		return problem.New("the node is still needed; lower the pod's requests or let it run on more pools",
			fmt.Sprintf("pod %s/%s would have no place to go (NoPlaceToMovePods)", s.Namespace, s.Name))
	}
	return nil
}

// podsToMove are the pods that must find another node: not DaemonSet or
// mirror pods, not finished, not already going.
func podsToMove(v *view, n *corev1.Node) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range v.podsOn(n.Name) {
		if finished(p) || p.DeletionTimestamp != nil {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
			continue
		}
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		out = append(out, p)
	}
	// By name, so that the blocker reported first does not depend on
	// the order of a cache.
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// utilization is cluster-autoscaler's: what the node's pods (DaemonSet
// pods included) request, as a share of its allocatable. A GPU node is
// judged by its GPUs alone, against the GPU threshold; others by the
// larger of the CPU and memory shares. It returns the figures in words,
// the share, and the threshold it is held to.
func utilization(v *view, g *group, n *corev1.Node) (string, float64, float64) {
	var req = corev1.ResourceList{}
	for _, p := range v.podsOn(n.Name) {
		if finished(p) {
			continue
		}
		for name, q := range resource.PodRequests(p, resource.PodResourcesOptions{}) {
			sum := req[name]
			sum.Add(q)
			req[name] = sum
		}
	}
	share := func(name corev1.ResourceName, alloc int64) float64 {
		if alloc <= 0 {
			return 0
		}
		q := req[name]
		if name == corev1.ResourceCPU {
			return float64(q.MilliValue()) / float64(alloc)
		}
		return float64(q.Value()) / float64(alloc)
	}
	if gpus := gpuCount(n); gpus > 0 {
		s := share(g.gpuResource(), int64(gpus))
		return fmt.Sprintf("gpu %.0f%%", s*100), s, *v.profile.ScaleDownGpuUtilizationThreshold
	}
	cpu := share(corev1.ResourceCPU, n.Status.Allocatable.Cpu().MilliValue())
	mem := share(corev1.ResourceMemory, n.Status.Allocatable.Memory().Value())
	return fmt.Sprintf("cpu %.0f%%, memory %.0f%%", cpu*100, mem*100), max(cpu, mem), *v.profile.ScaleDownUtilizationThreshold
}

// localVolume names a pod's emptyDir or hostPath volume, "" when it has
// none: cluster-autoscaler will not move such a pod by default.
func localVolume(p *corev1.Pod) string {
	for _, vol := range p.Spec.Volumes {
		if vol.EmptyDir != nil || vol.HostPath != nil {
			return vol.Name
		}
	}
	return ""
}

// keep reports on a node why it stays (NoScaleDown), when the reason
// changes; "" forgets it.
func (c *Controller) keep(ctx context.Context, n *corev1.Node, why string) {
	if c.blocked[n.Name] == why {
		return
	}
	if why == "" {
		delete(c.blocked, n.Name)
		return
	}
	c.blocked[n.Name] = why
	c.recorder.Event(n, corev1.EventTypeNormal, castatus.ReasonNoScaleDown, "node is unneeded but cannot be removed: "+why)
}

// budgetCounter tracks how many more evictions each PodDisruptionBudget
// allows across the nodes of one scan.
type budgetCounter struct {
	budgets []*policyv1.PodDisruptionBudget
	left    map[*policyv1.PodDisruptionBudget]int32
}

func newBudgetCounter(b []*policyv1.PodDisruptionBudget) *budgetCounter {
	bc := &budgetCounter{budgets: b, left: map[*policyv1.PodDisruptionBudget]int32{}}
	for _, pdb := range b {
		bc.left[pdb] = pdb.Status.DisruptionsAllowed
	}
	return bc
}

func (bc *budgetCounter) matching(p *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range bc.budgets {
		if pdb.Namespace != p.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out
}

func (bc *budgetCounter) covers(p *corev1.Pod) bool { return len(bc.matching(p)) > 0 }

// take counts the evictions of pods against their budgets and returns
// the first budget they would break (counting nothing then).
func (bc *budgetCounter) take(pods []*corev1.Pod) string {
	need := map[*policyv1.PodDisruptionBudget]int32{}
	for _, p := range pods {
		for _, pdb := range bc.matching(p) {
			need[pdb]++
		}
	}
	for pdb, n := range need {
		if bc.left[pdb] < n {
			return pdb.Namespace + "/" + pdb.Name
		}
	}
	for pdb, n := range need {
		bc.left[pdb] -= n
	}
	return ""
}

// give returns what take counted.
func (bc *budgetCounter) give(pods []*corev1.Pod) {
	for _, p := range pods {
		for _, pdb := range bc.matching(p) {
			bc.left[pdb]++
		}
	}
}
