package simulate

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// FitAfter is apply's question before a pool change removes nodes
// (pools.Fit): over nodes (those kept and those added) with staying
// bound to them, would the displaced pods find a place? They are placed
// first-fit, in order, so that each counts against the room the next
// one finds (resources, spread, affinity). For each pod that fits
// nowhere it returns its verdict on each node, in words a blocker can
// quote ("it does not tolerate the taint gpu=new:NoSchedule").
func FitAfter(ctx context.Context, nodes []*corev1.Node, staying, displaced []*corev1.Pod) (map[types.UID]map[string]string, error) {
	sim, err := New(ctx, Cluster{Nodes: nodes, Pods: staying})
	if err != nil {
		return nil, err
	}
	moving := make([]*corev1.Pod, len(displaced))
	for i, p := range displaced {
		q := p.DeepCopy()
		q.Spec.NodeName = ""
		q.Status.NominatedNodeName = ""
		moving[i] = q
	}
	_, unplaced, err := sim.Place(ctx, moving)
	if err != nil {
		return nil, err
	}
	out := map[types.UID]map[string]string{}
	for _, p := range unplaced {
		res, err := sim.Check(ctx, p)
		if err != nil {
			return nil, err
		}
		why := map[string]string{}
		for _, v := range res.Nodes {
			why[v.Node] = words(p, sim.snap.infos[v.Node].Node(), v)
		}
		out[p.UID] = why
	}
	return out, nil
}

// words is a verdict as a sentence about the pod.
func words(pod *corev1.Pod, node *corev1.Node, v Verdict) string {
	switch v.Plugin {
	case "":
		return "it fits, but the pods before it took the room"
	case names.TaintToleration:
		if t, ok := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); ok {
			return fmt.Sprintf("it does not tolerate the taint %s", t.ToString())
		}
	case names.NodeAffinity:
		return "its node selector or required node affinity does not match the node's labels"
	}
	return fmt.Sprintf("%s: %s", v.Plugin, strings.Join(v.Reasons, "; "))
}
