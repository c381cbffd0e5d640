package budgets

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"berth.io/berth/api/v1alpha1"
)

// Controller reconciles a namespace's budgets whenever one of its
// Deployments or StatefulSets is created, deleted or changes its pod
// template or selector, and whenever the namespace's classes change.
type Controller struct {
	client kubernetes.Interface
	queue  workqueue.TypedRateLimitingInterface[string]
}

// NewController returns a controller that writes budgets through client.
func NewController(client kubernetes.Interface) *Controller {
	return &Controller{
		client: client,
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
}

// Run watches until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	factory := informers.NewSharedInformerFactory(c.client, 10*time.Minute)
	// Status updates change neither the template nor the selector: only
	// a new generation (or a new or deleted object) can change a budget.
	onChange := cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, cur any) {
			o, _ := meta.Accessor(old)
			n, _ := meta.Accessor(cur)
			if o == nil || n == nil || o.GetGeneration() != n.GetGeneration() || o.GetAnnotations()[v1alpha1.AnnotationBudgets] != n.GetAnnotations()[v1alpha1.AnnotationBudgets] {
				c.enqueue(cur)
			}
		},
		DeleteFunc: c.enqueue,
	}
	for _, inf := range []cache.SharedIndexInformer{
		factory.Apps().V1().Deployments().Informer(),
		factory.Apps().V1().StatefulSets().Informer(),
		factory.Core().V1().Namespaces().Informer(),
	} {
		if _, err := inf.AddEventHandler(onChange); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.next(ctx) {
	}
	factory.Shutdown()
	return nil
}

func (c *Controller) next(ctx context.Context) bool {
	ns, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(ns)
	if err := Reconcile(ctx, c.client, ns); err != nil {
		if ctx.Err() == nil {
			klog.ErrorS(err, "reconciling disruption budgets", "namespace", ns)
			c.queue.AddRateLimited(ns)
		}
		return true
	}
	c.queue.Forget(ns)
	return true
}

// enqueue queues the namespace of a workload, or the namespace itself.
func (c *Controller) enqueue(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch o := obj.(type) {
	case *corev1.Namespace:
		if o.Annotations[v1alpha1.AnnotationBudgets] != "" {
			c.queue.Add(o.Name)
		}
	case *appsv1.Deployment:
		c.queue.Add(o.Namespace)
	case *appsv1.StatefulSet:
		c.queue.Add(o.Namespace)
	}
}
