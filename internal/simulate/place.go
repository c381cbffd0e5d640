package simulate

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
)

// Placement is a pod and the node the simulation bound it to.
type Placement struct {
	Pod  *corev1.Pod
	Node string
}

// Place places pods, in order, on the nodes of the simulation, binding
// each to the first node whose Filter plugins all let it on, so that
// the pods after it see it there (its resources, ports, spread and
// affinity). It returns where each pod went and the pods that fit
// nowhere. This is cluster-autoscaler's "which pending pods would the
// scheduler place anyway": fit is the scheduler's; the choice among
// fitting nodes is first fit, not the scheduler's scoring.
func (s *Simulator) Place(ctx context.Context, pods []*corev1.Pod) ([]Placement, []*corev1.Pod, error) {
	var (
		placed   []Placement
		unplaced []*corev1.Pod
		groups   = map[types.UID]*group{}
		// next is where the next search starts, as the scheduler's
		// nextStartNodeIndex: the node that took the last pod. Starting
		// over from the first node would test every full node again.
		next int
	)
	for _, pod := range pods {
		g := groupOf(groups, pod)
		if g != nil && g.failedAt == s.snap.generation {
			// An identical pod fit nowhere and nothing has changed since.
			unplaced = append(unplaced, pod)
			continue
		}
		hint := ""
		if g != nil {
			hint = g.last
		}
		node, at, err := s.firstFit(ctx, g, pod, s.snap.list, next, hint)
		if err != nil {
			return nil, nil, err
		}
		if node == "" {
			if g != nil {
				g.failedAt = s.snap.generation
			}
			unplaced = append(unplaced, pod)
			continue
		}
		if err := s.snap.bind(pod, node); err != nil {
			return nil, nil, err
		}
		s.carry(ctx, g, pod, node)
		if g != nil {
			g.last = node
		}
		if at >= 0 {
			next = at
		}
		placed = append(placed, Placement{Pod: pod, Node: node})
	}
	return placed, unplaced, nil
}

// firstFit runs PreFilter for pod and then Filter on nodes, the hinted
// node first and then the others from start on, round. It returns the
// first node that fits and its index in nodes (-1 for the hint), or ""
// when none fits.
func (s *Simulator) firstFit(ctx context.Context, g *group, pod *corev1.Pod, nodes []fwk.NodeInfo, start int, hint string) (string, int, error) {
	c, err := s.cycleFor(ctx, g, pod)
	if err != nil || c.all != nil {
		return "", -1, err
	}
	if hint != "" {
		if ni, ok := s.snap.infos[hint]; ok {
			v, err := s.filter(ctx, c, pod, ni)
			if err != nil || v.Fits() {
				return v.Node, -1, err
			}
		}
	}
	for i := range nodes {
		at := (start + i) % len(nodes)
		ni := nodes[at]
		if ni.Node().Name == hint {
			continue
		}
		v, err := s.filter(ctx, c, pod, ni)
		if err != nil {
			return "", -1, err
		}
		if v.Fits() {
			return v.Node, at, nil
		}
	}
	return "", -1, nil
}

// group is the pods of one controller with the same labels and spec:
// the scheduler gives them the same verdict on the same snapshot.
type group struct {
	pod *corev1.Pod
	// failedAt is the snapshot generation at which a pod of the group
	// fit nowhere; -1 when none has failed.
	failedAt int64
	// last is the node the group's last pod went to: the next one
	// likely fits there too.
	last string
	// misfit is, in Pack, the failed pod's verdict on an empty new node.
	misfit Verdict
}

// groupOf finds pod's group, making one if pod is the first of its
// controller. It returns nil for a pod with no controller, or one that
// differs from the first pod of its controller (mid-rollout).
func groupOf(groups map[types.UID]*group, pod *corev1.Pod) *group {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil
	}
	g, ok := groups[ref.UID]
	if !ok {
		g = &group{pod: pod, failedAt: -1}
		groups[ref.UID] = g
		return g
	}
	if pod.Namespace != g.pod.Namespace ||
		!equality.Semantic.DeepEqual(pod.Labels, g.pod.Labels) ||
		!equality.Semantic.DeepEqual(pod.Spec, g.pod.Spec) {
		return nil
	}
	return g
}
