package slim

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PodsByNode is the index of a pod informer by spec.nodeName; a pod not
// bound is under "".
const PodsByNode = "spec.nodeName"

// IndexPodsByNode adds the PodsByNode index to a pod informer, unless it
// has it: the spot and kubelet controllers share one. Add it before the
// informer starts; a running informer takes no new indexers.
func IndexPodsByNode(pods cache.SharedIndexInformer) error {
	if _, ok := pods.GetIndexer().GetIndexers()[PodsByNode]; ok {
		return nil
	}
	return pods.AddIndexers(cache.Indexers{PodsByNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}})
}
