package budgets

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"

	"berth.io/berth/api/v1alpha1"
)

// Reader is what Reconcile reads of a namespace: the Controller reads
// its informers' caches, berth apply the API (FromAPI).
type Reader interface {
	Namespace(ctx context.Context, name string) (*corev1.Namespace, error)
	Deployments(ctx context.Context, namespace string) ([]*appsv1.Deployment, error)
	StatefulSets(ctx context.Context, namespace string) ([]*appsv1.StatefulSet, error)
	// Budgets are the PodDisruptionBudgets berth made in the namespace
	// (labelled managed by berth).
	Budgets(ctx context.Context, namespace string) ([]*policyv1.PodDisruptionBudget, error)
}

// berths selects what berth made.
var berths = labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}

// FromAPI reads through c, a list per call: for berth apply, which
// reconciles each namespace once.
func FromAPI(c kubernetes.Interface) Reader { return api{c} }

type api struct{ c kubernetes.Interface }

func (a api) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return a.c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
}

func (a api) Deployments(ctx context.Context, namespace string) ([]*appsv1.Deployment, error) {
	list, err := a.c.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Deployments in %s: %w", namespace, err)
	}
	return pointers(list.Items), nil
}

func (a api) StatefulSets(ctx context.Context, namespace string) ([]*appsv1.StatefulSet, error) {
	list, err := a.c.AppsV1().StatefulSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing StatefulSets in %s: %w", namespace, err)
	}
	return pointers(list.Items), nil
}

func (a api) Budgets(ctx context.Context, namespace string) ([]*policyv1.PodDisruptionBudget, error) {
	list, err := a.c.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, metav1.ListOptions{LabelSelector: berths.String()})
	if err != nil {
		return nil, fmt.Errorf("listing budgets in %s: %w", namespace, err)
	}
	return pointers(list.Items), nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// listers read informers' caches, for the Controller.
type listers struct {
	namespaces   corelisters.NamespaceLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	budgets      policylisters.PodDisruptionBudgetLister
}

func listersOf(f informers.SharedInformerFactory) listers {
	return listers{
		namespaces:   f.Core().V1().Namespaces().Lister(),
		deployments:  f.Apps().V1().Deployments().Lister(),
		statefulSets: f.Apps().V1().StatefulSets().Lister(),
		budgets:      f.Policy().V1().PodDisruptionBudgets().Lister(),
	}
}

func (l listers) Namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	return l.namespaces.Get(name)
}

func (l listers) Deployments(_ context.Context, namespace string) ([]*appsv1.Deployment, error) {
	return l.deployments.Deployments(namespace).List(labels.Everything())
}

func (l listers) StatefulSets(_ context.Context, namespace string) ([]*appsv1.StatefulSet, error) {
	return l.statefulSets.StatefulSets(namespace).List(labels.Everything())
}

func (l listers) Budgets(_ context.Context, namespace string) ([]*policyv1.PodDisruptionBudget, error) {
	return l.budgets.PodDisruptionBudgets(namespace).List(labels.SelectorFromSet(berths))
}
