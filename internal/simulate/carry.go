package simulate

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// PreFilter is the costly part of a verdict: InterPodAffinity and
// PodTopologySpread count matching pods over every node. When the pods
// of one group (same controller, labels and spec) are placed one after
// another and nothing but their own binds changes the snapshot, the
// next pod's PreFilter state is the last one's with that pod added,
// which the plugins' own PreFilterExtensions.AddPod computes: the
// scheduler's preemption carries state forward for nominated pods the
// same way. A node added, or anything else bound, starts afresh.
//
// Not for pods with a DoNotSchedule topology spread constraint:
// PodTopologySpread's AddPod keeps only the two least-loaded domains,
// which is exact for the few pods preemption adds but drifts over a
// long run of binds (with three zones, two binds can leave the third,
// least-loaded zone untracked), and its Filter would then misjudge the
// skew.

// carried is a cycle carried forward for a group's next pod.
type carried struct {
	g   *group
	c   *cycle
	gen int64 // the snapshot generation the cycle reflects
}

// cycleFor is the PreFilter cycle for pod: carried forward when pod's
// group placed the last pod and nothing else changed since, else run.
func (s *Simulator) cycleFor(ctx context.Context, g *group, pod *corev1.Pod) (*cycle, error) {
	if k := s.carried; g != nil && k != nil && k.g == g && k.gen == s.snap.generation && !s.noCarry {
		s.lastCycle = k.c
		return k.c, nil
	}
	c, err := s.preFilter(ctx, pod)
	s.lastCycle = c
	return c, err
}

// carry records that pod, of group g, was just bound to node with the
// last cycle: the cycle, updated by the plugins' AddPod, serves the
// group's next pod.
func (s *Simulator) carry(ctx context.Context, g *group, pod *corev1.Pod, node string) {
	s.carried = nil
	c := s.lastCycle
	if g == nil || c == nil || c.all != nil || c.only != nil || hardSpread(pod) {
		return
	}
	bound := *pod
	bound.Spec.NodeName = node
	pi, err := framework.NewPodInfo(&bound)
	if err != nil {
		return
	}
	if st := s.fw.RunPreFilterExtensionAddPod(ctx, c.state, pod, pi, s.snap.infos[node]); !st.IsSuccess() {
		return
	}
	s.carried = &carried{g: g, c: c, gen: s.snap.generation}
}

// hardSpread reports whether pod has a DoNotSchedule topology spread
// constraint, whose PreFilter state cannot be carried exactly.
func hardSpread(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}
