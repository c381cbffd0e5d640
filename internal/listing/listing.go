// Package listing is how berth status and berth why list what grows with
// the cluster (pods, nodes and events): a command lists from the API
// server (FromAPI), berth dash from its informers' caches, passing its
// own Lister in. Everything else those readers need (quotas, classes,
// the autoscaler's ConfigMap) they read through the client as usual.
package listing

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Lister lists pods, nodes and events as the API server does: with
// label and field selectors, across all namespaces for "".
type Lister interface {
	Pods(ctx context.Context, namespace string, o metav1.ListOptions) (*corev1.PodList, error)
	Nodes(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error)
	Events(ctx context.Context, namespace string, o metav1.ListOptions) (*corev1.EventList, error)
}

// FromAPI lists from the API server through c.
func FromAPI(c kubernetes.Interface) Lister { return api{c} }

type api struct{ c kubernetes.Interface }

func (a api) Pods(ctx context.Context, namespace string, o metav1.ListOptions) (*corev1.PodList, error) {
	return a.c.CoreV1().Pods(namespace).List(ctx, o)
}

func (a api) Nodes(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
	return a.c.CoreV1().Nodes().List(ctx, o)
}

func (a api) Events(ctx context.Context, namespace string, o metav1.ListOptions) (*corev1.EventList, error) {
	return a.c.CoreV1().Events(namespace).List(ctx, o)
}
