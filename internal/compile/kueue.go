package compile

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"berth.io/berth/api/v1alpha1"
)

// Queueing with Kueue (spec.queueing: Kueue). The teams' quotas become
// Kueue's objects, written for the release berth builds against
// (v1alpha1.KueueVersion):
//
//   - a ResourceFlavor per GPU pool (its node labels and taints, so Kueue
//     admits a workload on a pool only when the workload's class reaches it
//     and tolerates it; spot and on-demand pools apart), and one flavor
//     with no labels, v1alpha1.AnyPoolFlavor, under which CPU and memory
//     are counted wherever a pod runs;
//   - a ClusterQueue per team, for the team's namespaces, in one cohort
//     named after the blueprint: CPU and memory as the team's quota caps
//     them (never borrowed, as a ResourceQuota never lends), GPUs per pool
//     as the team's queue splits them, with what it may borrow and lend;
//   - a WorkloadPriorityClass per class with a priority, beside its
//     PriorityClass and of the same name and value;
//   - a LocalQueue, named after the team, in each team namespace.
//
// The ResourceQuota keeps only the pod count then (quota), which Kueue
// does not count.

// kueueObjects are the Kueue objects of a blueprint that queues with
// Kueue, cluster-scoped first; none otherwise.
func kueueObjects(bp *v1alpha1.Blueprint) []Object {
	if !bp.Spec.UsesKueue() {
		return nil
	}
	out := []Object{resourceFlavor(bp, v1alpha1.AnyPoolFlavor, nil)}
	for _, p := range queuedGPUPools(bp) {
		out = append(out, resourceFlavor(bp, p.Name, p))
	}
	for i := range bp.Spec.Classes {
		if wpc := workloadPriorityClass(bp, &bp.Spec.Classes[i]); wpc != nil {
			out = append(out, wpc)
		}
	}
	for i := range bp.Spec.Teams {
		out = append(out, clusterQueue(bp, &bp.Spec.Teams[i]))
	}
	for i := range bp.Spec.Teams {
		t := &bp.Spec.Teams[i]
		for _, ns := range t.Namespaces {
			out = append(out, &kueue.LocalQueue{
				TypeMeta:   typeMeta(kueue.GroupVersion, "LocalQueue"),
				ObjectMeta: meta(bp, ns, t.Name, map[string]string{v1alpha1.LabelTeam: t.Name}),
				Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(t.Name)},
			})
		}
	}
	return out
}

// queuedGPUPools are the GPU pools some team queues for, in the
// blueprint's order.
func queuedGPUPools(bp *v1alpha1.Blueprint) []*v1alpha1.Pool {
	used := map[string]bool{}
	for i := range bp.Spec.Teams {
		for _, p := range bp.Spec.QueueGPUPools(&bp.Spec.Teams[i]) {
			used[p.Name] = true
		}
	}
	var out []*v1alpha1.Pool
	for i := range bp.Spec.Pools {
		if p := &bp.Spec.Pools[i]; used[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// resourceFlavor is pool's flavor, or the flavor without labels when
// pool is nil.
func resourceFlavor(bp *v1alpha1.Blueprint, name string, pool *v1alpha1.Pool) *kueue.ResourceFlavor {
	rf := &kueue.ResourceFlavor{
		TypeMeta:   typeMeta(kueue.GroupVersion, "ResourceFlavor"),
		ObjectMeta: meta(bp, "", name, nil),
	}
	if pool != nil {
		rf.Labels[v1alpha1.LabelPool] = pool.Name
		rf.Spec.NodeLabels = map[string]string{v1alpha1.LabelPool: pool.Name}
		rf.Spec.NodeTaints = pool.NodeTaints()
	}
	return rf
}

func workloadPriorityClass(bp *v1alpha1.Blueprint, c *v1alpha1.Class) *kueue.WorkloadPriorityClass {
	name := c.PriorityClassName()
	if name == "" {
		return nil
	}
	return &kueue.WorkloadPriorityClass{
		TypeMeta:    typeMeta(kueue.GroupVersion, "WorkloadPriorityClass"),
		ObjectMeta:  meta(bp, "", name, map[string]string{v1alpha1.LabelClass: c.Name}),
		Value:       priorityValues[c.Priority],
		Description: fmt.Sprintf("berth class %s (%s priority) of blueprint %s: Kueue's order for its workloads, as PriorityClass %s is the scheduler's.", c.Name, c.Priority, bp.Metadata.Name, name),
	}
}

// clusterQueue is the team's ClusterQueue.
func clusterQueue(bp *v1alpha1.Blueprint, t *v1alpha1.Team) *kueue.ClusterQueue {
	cpu, mem := clusterCapacity(bp)
	var quota v1alpha1.Quota
	if t.Quota != nil {
		quota = *t.Quota
	}
	// CPU and memory: the team's quota, not lent and never borrowed, as
	// a ResourceQuota caps them; without one, the most the cluster holds
	// (Kueue must cover every resource a workload asks for).
	capped := func(name corev1.ResourceName, q *resource.Quantity, most resource.Quantity) kueue.ResourceQuota {
		if q == nil {
			return kueue.ResourceQuota{Name: name, NominalQuota: most}
		}
		return kueue.ResourceQuota{Name: name, NominalQuota: q.DeepCopy(), BorrowingLimit: quantity(0), LendingLimit: quantity(0)}
	}
	groups := []kueue.ResourceGroup{{
		CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		Flavors: []kueue.FlavorQuotas{{Name: v1alpha1.AnyPoolFlavor, Resources: []kueue.ResourceQuota{
			capped(corev1.ResourceCPU, quota.CPU, cpu),
			capped(corev1.ResourceMemory, quota.Memory, mem),
		}}},
	}}
	// GPUs: per pool, in the order Kueue tries them. A team without a
	// GPU quota may use as many as each pool holds.
	gpus := bp.Spec.TeamGPUs(t)
	if quota.GPU == nil {
		for _, p := range bp.Spec.QueueGPUPools(t) {
			gpus = append(gpus, v1alpha1.PoolGPUs{Pool: p.Name, Count: p.MaxGPUs()})
		}
	}
	if len(gpus) > 0 {
		g := kueue.ResourceGroup{CoveredResources: []corev1.ResourceName{v1alpha1.DefaultGPUResource}}
		for _, pg := range gpus {
			r := kueue.ResourceQuota{Name: v1alpha1.DefaultGPUResource, NominalQuota: *quantity(pg.Count)}
			if q := t.Queue; q != nil && len(bp.Spec.Teams) > 1 {
				if q.Borrow != nil {
					r.BorrowingLimit = quantity(q.Borrow.Value())
				}
				if q.Lend != nil {
					// Kueue refuses a lending limit above the nominal quota.
					r.LendingLimit = quantity(min(q.Lend.Value(), pg.Count))
				}
			}
			g.Flavors = append(g.Flavors, kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(pg.Pool), Resources: []kueue.ResourceQuota{r}})
		}
		groups = append(groups, g)
	}
	tryNext := kueue.TryNextFlavor
	var fair *kueue.FairSharing
	if bp.Spec.FairSharing && t.Queue != nil && t.Queue.Weight != nil {
		fair = &kueue.FairSharing{Weight: ptrTo(t.Queue.Weight.DeepCopy())}
	}
	return &kueue.ClusterQueue{
		TypeMeta:   typeMeta(kueue.GroupVersion, "ClusterQueue"),
		ObjectMeta: meta(bp, "", t.Name, map[string]string{v1alpha1.LabelTeam: t.Name}),
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelTeam: t.Name}},
			CohortName:        kueue.CohortReference(bp.Metadata.Name),
			ResourceGroups:    groups,
			// A team uses its own quota on the next pool before it
			// borrows or preempts on this one.
			FlavorFungibility: &kueue.FlavorFungibility{WhenCanBorrow: tryNext, WhenCanPreempt: tryNext},
			Preemption: &kueue.ClusterQueuePreemption{
				// What a team lends it takes back, whatever the
				// borrower's priority: that is the cohort's contract.
				ReclaimWithinCohort: kueue.PreemptionPolicyAny,
				WithinClusterQueue:  withinTeam(bp, t),
			},
			// Under spec.fairSharing, the team's weight (Kueue's default,
			// 1, without one).
			FairSharing: fair,
		},
	}
}

// withinTeam is whether a team's workloads preempt its own lower ones:
// when one of its classes may preempt (preemption: PreemptLowerPriority)
// and has a lower class below it. Kueue decides this per ClusterQueue, not
// per workload, so a class with preemption: Never is held to it only
// when the team has no class that may preempt it.
func withinTeam(bp *v1alpha1.Blueprint, t *v1alpha1.Team) kueue.PreemptionPolicy {
	var classes []*v1alpha1.Class
	for i := range bp.Spec.Classes {
		c := &bp.Spec.Classes[i]
		if c.PriorityClassName() != "" && (len(t.Classes) == 0 || slices.Contains(t.Classes, c.Name)) {
			classes = append(classes, c)
		}
	}
	for _, high := range classes {
		if high.Preemption == v1alpha1.PreemptNever {
			continue
		}
		for _, low := range classes {
			if priorityValues[low.Priority] < priorityValues[high.Priority] {
				return kueue.PreemptionPolicyLowerPriority
			}
		}
	}
	return kueue.PreemptionPolicyNever
}

// clusterCapacity is the most CPU and memory the User pools hold at
// their largest.
func clusterCapacity(bp *v1alpha1.Blueprint) (cpu, mem resource.Quantity) {
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if p.Mode != v1alpha1.ModeUser {
			continue
		}
		for n := int32(0); n < p.MaxSize(); n++ {
			cpu.Add(p.Machine.CPU)
			mem.Add(p.Machine.Memory)
		}
	}
	return cpu, mem
}

func quantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// kueueKinds are Kueue's kinds berth writes, in the order they are
// applied.
var kueueKinds = []Kind{
	{kueue.GroupVersion.WithResource("resourceflavors"), "ResourceFlavor", false},
	{kueue.GroupVersion.WithResource("workloadpriorityclasses"), "WorkloadPriorityClass", false},
	{kueue.GroupVersion.WithResource("clusterqueues"), "ClusterQueue", false},
	{kueue.GroupVersion.WithResource("localqueues"), "LocalQueue", true},
}
