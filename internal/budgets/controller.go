package budgets

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
)

// Controller reconciles a namespace's budgets whenever one of its
// Deployments or StatefulSets is created, deleted or changes its pod
// template or selector, and whenever the namespace's classes change.
type Controller struct {
	client       kubernetes.Interface
	read         listers
	deployments  cache.SharedIndexInformer
	statefulSets cache.SharedIndexInformer
	namespaces   cache.SharedIndexInformer
	budgets      cache.SharedIndexInformer
}

// NewController returns a controller that writes budgets through client
// and reads workloads, namespaces and budgets from factory's caches,
// shared with berth's other controllers; the factory's owner starts it.
func NewController(client kubernetes.Interface, factory informers.SharedInformerFactory) *Controller {
	return &Controller{
		client:       client,
		read:         listersOf(factory),
		deployments:  factory.Apps().V1().Deployments().Informer(),
		statefulSets: factory.Apps().V1().StatefulSets().Informer(),
		namespaces:   factory.Core().V1().Namespaces().Informer(),
		budgets:      factory.Policy().V1().PodDisruptionBudgets().Informer(),
	}
}

// Register reconciles the namespace of each workload that changes, and
// each namespace whose classes' budgets change.
func (c *Controller) Register(m *controller.Manager) error {
	return m.Controller("budgets").
		WatchesChanges(c.deployments, changed, namespaceOf).
		WatchesChanges(c.statefulSets, changed, namespaceOf).
		WatchesChanges(c.namespaces, changed, namespaceOf).
		Reads(c.budgets).
		Complete(c)
}

// Reconcile makes the namespace's budgets what its workloads need.
func (c *Controller) Reconcile(ctx context.Context, namespace string) (controller.Result, error) {
	return controller.Result{}, Reconcile(ctx, c.client, c.read, namespace)
}

// changed is true of an update that can change a budget: a new
// generation (status updates change neither the template nor the
// selector), or new budgets for the namespace's classes.
func changed(old, cur any) bool {
	o, _ := meta.Accessor(old)
	n, _ := meta.Accessor(cur)
	return o == nil || n == nil || o.GetGeneration() != n.GetGeneration() || o.GetAnnotations()[v1alpha1.AnnotationBudgets] != n.GetAnnotations()[v1alpha1.AnnotationBudgets]
}

// namespaceOf is the namespace of a workload, or a namespace whose
// classes have budgets.
func namespaceOf(obj any) []string {
	switch o := obj.(type) {
	case *corev1.Namespace:
		if o.Annotations[v1alpha1.AnnotationBudgets] != "" {
			return []string{o.Name}
		}
	case *appsv1.Deployment:
		return []string{o.Namespace}
	case *appsv1.StatefulSet:
		return []string{o.Namespace}
	}
	return nil
}
