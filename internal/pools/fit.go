package pools

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/internal/problem"
)

// Fit answers, for a plan, "would the pods on the nodes it removes find
// a place once every change is made?" Nodes are the nodes after the
// changes (those kept, then those added), staying the pods that stay
// bound to the kept nodes, and displaced the pods that must move, in
// order. It returns, for each displaced pod that would fit nowhere, why
// not on each of nodes, by node name. internal/simulate answers it with
// the kube-scheduler's own Filter plugins (simulate.FitAfter), counting
// resources; pools cannot import it (simulate builds pools' nodes), so
// the caller hands it in.
type Fit func(ctx context.Context, nodes []*corev1.Node, staying, displaced []*corev1.Pod) (map[types.UID]map[string]string, error)

// block fills each change's Blockers: pods on nodes it removes that no
// controller would recreate, or, when fit is set, that would find no
// node to run on once every change is made.
func block(ctx context.Context, changes []Change, nodes []corev1.Node, podsOn map[string][]*corev1.Pod, fit Fit) error {
	removed := map[string]bool{}
	for i := range changes {
		for _, n := range changes[i].remove {
			removed[n] = true
		}
	}
	var (
		final     []*corev1.Node
		staying   []*corev1.Pod
		displaced []*corev1.Pod
	)
	for i := range nodes {
		if !removed[nodes[i].Name] {
			final = append(final, &nodes[i])
			staying = append(staying, podsOn[nodes[i].Name]...)
		}
	}
	for i := range changes {
		final = append(final, changes[i].add...)
		for _, node := range changes[i].remove {
			for _, pod := range podsOn[node] {
				if !isDaemon(pod) && !isMirror(pod) && metav1.GetControllerOf(pod) != nil {
					displaced = append(displaced, pod)
				}
			}
		}
	}
	var stuckWhy map[types.UID]map[string]string
	if fit != nil && len(displaced) > 0 {
		var err error
		if stuckWhy, err = fit(ctx, final, staying, displaced); err != nil {
			return fmt.Errorf("simulating where the displaced pods would go: %w", err)
		}
	}
	for i := range changes {
		ch := &changes[i]
		stuck := map[string][]string{} // owner → pod names
		var why = map[string]string{}
		for _, node := range ch.remove {
			for _, pod := range podsOn[node] {
				if isDaemon(pod) || isMirror(pod) {
					continue
				}
				owner := metav1.GetControllerOf(pod)
				if owner == nil {
					ch.Blockers = append(ch.Blockers, problem.Problem{
						Message: fmt.Sprintf("pod %s/%s on %s has no controller, so nothing would recreate it after eviction", pod.Namespace, pod.Name, node),
						Fix:     "delete it, or run it under a Deployment, StatefulSet or Job, then apply again",
					})
					continue
				}
				reasons, ok := stuckWhy[pod.UID]
				if !ok {
					continue
				}
				key := fmt.Sprintf("%s %s/%s", owner.Kind, pod.Namespace, owner.Name)
				stuck[key] = append(stuck[key], pod.Name)
				why[key] = misfit(reasons, ch.add)
			}
		}
		keys := make([]string, 0, len(stuck))
		for k := range stuck {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ch.Blockers = append(ch.Blockers, problem.Problem{
				Message: fmt.Sprintf("%s: %d pod(s) would have nowhere to run after the change%s", k, len(stuck[k]), why[k]),
				Fix:     "let the workload run on the new nodes (tolerations, node selector), or make room for it, then apply again",
			})
		}
	}
	return nil
}

// misfit says why a pod fits none of the change's new nodes: the first
// one's verdict.
func misfit(reasons map[string]string, added []*corev1.Node) string {
	if len(added) == 0 {
		return ""
	}
	if r := reasons[added[0].Name]; r != "" {
		return " (on the new nodes: " + r + ")"
	}
	return ""
}

func isDaemon(p *corev1.Pod) bool {
	owner := metav1.GetControllerOf(p)
	return owner != nil && owner.Kind == "DaemonSet"
}

func isMirror(p *corev1.Pod) bool {
	_, ok := p.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}
