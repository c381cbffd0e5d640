package metricsapi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/slim"
)

// The Service the APIServices point at. On a local cluster nothing routes
// a Service's address (there is no kube-proxy), so berth's API server
// resolves this one to the server's loopback address (see
// internal/cluster); it is an ExternalName Service because a ClusterIP one
// would need endpoints, and the API server refuses loopback endpoints.
const (
	Namespace   = metav1.NamespaceSystem
	ServiceName = "berth-metrics"
	servicePort = 443
)

// Controller fills a starting Server's listers from shared informers and
// registers the APIs with the aggregator. The server itself listens from
// before the API server starts (internal/cluster).
type Controller struct {
	client     kubernetes.Interface
	aggregator aggregator.Interface
	server     *Server
	caBundle   []byte
	factory    informers.SharedInformerFactory
	ownFactory bool
}

// NewController completes server (from NewStartingServer); caBundle is
// what the aggregator verifies the server's certificate with. The
// cluster-wide listers come from factory, shared with berth's other
// controllers; nil makes a factory of its own. A shared factory's owner
// starts it and shuts it down.
func NewController(client kubernetes.Interface, agg aggregator.Interface, server *Server, caBundle []byte, factory informers.SharedInformerFactory) *Controller {
	c := &Controller{client: client, aggregator: agg, server: server, caBundle: caBundle, factory: factory}
	if c.factory == nil {
		c.factory, c.ownFactory = slim.Informers(client, 0), true
	}
	// Registered now, before the shared factory starts.
	c.factory.Core().V1().Pods().Informer()
	c.factory.Core().V1().Nodes().Informer()
	c.factory.Apps().V1().Deployments().Informer()
	c.factory.Apps().V1().StatefulSets().Informer()
	return c
}

// Register runs the controller: it serves from its caches, and
// reconciles nothing but its APIServices, once. The server reads the
// time (the load's playback) from the manager's clock.
func (c *Controller) Register(m *controller.Manager) error {
	c.server.Now = m.Clock().Now
	m.Add("metrics", c.Run)
	return nil
}

// Run syncs the server's caches, registers the APIs and keeps the caches
// current until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	factory := c.factory
	system := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(LoadNamespace))
	s := c.server
	s.Pods = factory.Core().V1().Pods().Lister()
	s.Nodes = factory.Core().V1().Nodes().Lister()
	s.Deployments = factory.Apps().V1().Deployments().Lister()
	s.StatefulSets = factory.Apps().V1().StatefulSets().Lister()
	s.Loads = system.Core().V1().ConfigMaps().Lister().ConfigMaps(LoadNamespace)
	factory.Start(ctx.Done())
	system.Start(ctx.Done())
	if c.ownFactory {
		defer factory.Shutdown()
	}
	defer system.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(),
		factory.Core().V1().Pods().Informer().HasSynced, factory.Core().V1().Nodes().Informer().HasSynced,
		factory.Apps().V1().Deployments().Informer().HasSynced, factory.Apps().V1().StatefulSets().Informer().HasSynced,
		system.Core().V1().ConfigMaps().Informer().HasSynced) {
		return ctx.Err()
	}
	s.starting.Store(false)
	if err := c.register(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// register creates (or brings up to date) the Service and an APIService
// per group version, as a metrics adapter's manifests would.
func (c *Controller) register(ctx context.Context) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: Namespace, Labels: managedBy},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	services := c.client.CoreV1().Services(Namespace)
	if _, err := services.Get(ctx, ServiceName, metav1.GetOptions{}); err != nil {
		if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Service %s/%s for the metrics APIs: %w", Namespace, ServiceName, err)
		}
	}
	apis := c.aggregator.ApiregistrationV1().APIServices()
	for _, gv := range GroupVersions {
		want := &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group, Labels: managedBy},
			Spec: apiregistrationv1.APIServiceSpec{
				Service:              &apiregistrationv1.ServiceReference{Namespace: Namespace, Name: ServiceName, Port: ptr.To[int32](servicePort)},
				Group:                gv.Group,
				Version:              gv.Version,
				CABundle:             c.caBundle,
				GroupPriorityMinimum: 100,
				VersionPriority:      100,
			},
		}
		have, err := apis.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			if _, err := apis.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("registering APIService %s: %w", want.Name, err)
			}
			continue
		}
		have.Spec = want.Spec
		if _, err := apis.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating APIService %s: %w", want.Name, err)
		}
	}
	return nil
}

var managedBy = map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}
