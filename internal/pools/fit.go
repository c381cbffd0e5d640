package pools

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// block fills each change's Blockers: pods on nodes it removes that no
// controller would recreate, or that would find no node to run on once
// every change is made.
func block(changes []Change, nodes []corev1.Node, podsOn map[string][]*corev1.Pod) {
	removed := map[string]bool{}
	for i := range changes {
		for _, n := range changes[i].remove {
			removed[n] = true
		}
	}
	var final []*corev1.Node
	for i := range nodes {
		if !removed[nodes[i].Name] {
			final = append(final, &nodes[i])
		}
	}
	for i := range changes {
		final = append(final, changes[i].add...)
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
					ch.Blockers = append(ch.Blockers, fmt.Sprintf("pod %s/%s on %s has no controller, so nothing would recreate it after eviction\nfix: delete it, or run it under a Deployment, StatefulSet or Job, then apply again", pod.Namespace, pod.Name, node))
					continue
				}
				if fitsAny(pod, final) {
					continue
				}
				key := fmt.Sprintf("%s %s/%s", owner.Kind, pod.Namespace, owner.Name)
				stuck[key] = append(stuck[key], pod.Name)
				why[key] = misfit(pod, ch.add)
			}
		}
		keys := make([]string, 0, len(stuck))
		for k := range stuck {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ch.Blockers = append(ch.Blockers, fmt.Sprintf("%s: %d pod(s) would have nowhere to run after the change%s\nfix: let the workload run on the new nodes (tolerations, node selector), then apply again", k, len(stuck[k]), why[k]))
		}
	}
}

// fitsAny reports whether pod tolerates the taints and matches the
// required node affinity of at least one node. Resources are not
// counted: the scheduler has the last word on those.
func fitsAny(pod *corev1.Pod, nodes []*corev1.Node) bool {
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			continue
		}
		if fits(pod, n) == "" {
			return true
		}
	}
	return false
}

// fits is "" when pod may run on node, and otherwise the first reason it
// may not.
func fits(pod *corev1.Pod, node *corev1.Node) string {
	if t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false); untolerated {
		return fmt.Sprintf("it does not tolerate the taint %s", t.ToString())
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return "its node selector or required node affinity does not match the node's labels"
	}
	return ""
}

// misfit explains why pod fits none of the new nodes.
func misfit(pod *corev1.Pod, added []*corev1.Node) string {
	if len(added) == 0 {
		return ""
	}
	if r := fits(pod, added[0]); r != "" {
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
