package kueue

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	visibilityopenapi "sigs.k8s.io/kueue/apis/visibility/openapi"
	visibilityv1beta1 "sigs.k8s.io/kueue/apis/visibility/v1beta1"
	visibilityv1beta2 "sigs.k8s.io/kueue/apis/visibility/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	"sigs.k8s.io/kueue/pkg/visibility/storage"

	"berth.io/berth/api/v1alpha1"
)

// Kueue's visibility API (visibility.kueue.x-k8s.io): the Workloads
// pending in a ClusterQueue or LocalQueue, with each one's position, read
// from Kueue's own queue manager. Kueue's binary serves it (on by
// default, its VisibilityOnDemand gate) from an API server of its own
// behind the cluster's aggregator, with delegated authentication and
// authorization. berth-kueue serves the same storage the same way, with
// two differences Kueue's server function does not allow: it listens on
// a loopback port, not every address, and its certificate is the one
// berth issued (Kueue's reads a fixed /visibility directory).
var (
	visibilityScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(visibilityv1beta2.AddToScheme(s))
		utilruntime.Must(visibilityv1beta1.AddToScheme(s))
		metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
		return s
	}()
	visibilityCodecs = serializer.NewCodecFactory(visibilityScheme)
)

// Visibility says where berth-kueue serves Kueue's visibility API.
type Visibility struct {
	// Listener is a loopback listener; the cluster's API server reaches
	// it as the Service v1alpha1.KueueVisibilityService names.
	Listener net.Listener
	// CertFile and KeyFile are the serving certificate, for that
	// Service's name; CABundle (Options) signed it.
	CertFile, KeyFile string
	// Kubeconfig is the file the server delegates authentication and
	// authorization with (TokenReviews, SubjectAccessReviews, and the
	// front proxy's CA the aggregator's requests are signed with).
	Kubeconfig string
}

// serveVisibility runs Kueue's visibility API server on v until ctx ends.
func serveVisibility(ctx context.Context, v *Visibility, queues *qcache.Manager, kubeConfig *rest.Config) error {
	o := genericoptions.NewRecommendedOptions("", visibilityCodecs.LegacyCodec(visibilityv1beta2.SchemeGroupVersion, visibilityv1beta1.SchemeGroupVersion))
	o.Etcd = nil
	o.Admission = nil // Kueue's turns its plugins off; none applies to reads
	o.SecureServing.Listener = v.Listener
	o.SecureServing.ServerCert.CertKey = genericoptions.CertKey{CertFile: v.CertFile, KeyFile: v.KeyFile}
	o.Authentication.RemoteKubeConfigFile = v.Kubeconfig
	o.Authorization.RemoteKubeConfigFile = v.Kubeconfig
	o.CoreAPI.CoreAPIKubeconfigPath = v.Kubeconfig

	c := genericapiserver.NewRecommendedConfig(visibilityCodecs)
	c.EffectiveVersion = compatibility.NewEffectiveVersionFromString(baseversion.DefaultKubeBinaryVersion, "", "")
	namer := openapinamer.NewDefinitionNamer(visibilityScheme)
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(visibilityopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(visibilityopenapi.GetOpenAPIDefinitions, namer)
	c.OpenAPIConfig.Info.Title = "Kueue visibility-server"
	c.OpenAPIV3Config.Info.Title = "Kueue visibility-server"
	c.ClientConfig = rest.CopyConfig(kubeConfig)
	if err := o.ApplyTo(c); err != nil {
		return fmt.Errorf("Kueue's visibility server: %w", err)
	}
	server, err := c.Complete().New("kueue-visibility", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return fmt.Errorf("Kueue's visibility server: %w", err)
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(visibilityv1beta2.GroupVersion.Group, visibilityScheme, runtime.NewParameterCodec(visibilityScheme), visibilityCodecs)
	stores := storage.NewStorage(queues)
	group.VersionedResourcesStorageMap[visibilityv1beta2.GroupVersion.Version] = stores
	group.VersionedResourcesStorageMap[visibilityv1beta1.GroupVersion.Version] = stores
	group.PrioritizedVersions = []schema.GroupVersion{visibilityv1beta2.GroupVersion, visibilityv1beta1.GroupVersion}
	if err := server.InstallAPIGroups(&group); err != nil {
		return fmt.Errorf("Kueue's visibility API: %w", err)
	}
	return server.PrepareRun().RunWithContext(ctx)
}

// visibilityVersions are the group versions Kueue's manifests register
// with the aggregator, one APIService each
// (v1alpha1.KueueVisibilityAPIServices names them, for the cluster that
// removes them).
var visibilityVersions = []schema.GroupVersion{visibilityv1beta2.GroupVersion, visibilityv1beta1.GroupVersion}

// registerVisibility waits for the visibility server at addr to answer,
// creates (or brings up to date) the Service and the APIServices that
// send the aggregator to it, as Kueue's manifests do, and waits for the
// aggregator to find it available, so that the API answers once Kueue is
// ready. The Service is an ExternalName one: nothing routes a Service's
// address on a local cluster, and berth's API server resolves this one
// to the server's loopback address.
//
// The server must answer before it is registered: until it has read the
// front proxy's CA from the cluster (delegated authentication), it
// refuses the aggregator's first look, and the aggregator looks again
// only later.
func registerVisibility(ctx context.Context, cfg *rest.Config, caBundle []byte, addr string) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	agg, err := aggregator.NewForConfig(cfg)
	if err != nil {
		return err
	}
	direct := rest.CopyConfig(cfg)
	direct.Host = "https://" + addr
	server, err := kubernetes.NewForConfig(direct)
	if err != nil {
		return err
	}
	discovery := "/apis/" + visibilityv1beta2.GroupVersion.String()
	if err := retryFor(ctx, time.Minute, func() error {
		_, err := server.Discovery().RESTClient().Get().AbsPath(discovery).DoRaw(ctx)
		return err
	}); err != nil {
		return fmt.Errorf("Kueue's visibility server on %s does not answer: %w", addr, err)
	}
	labels := map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}
	ns, name := metav1.NamespaceSystem, v1alpha1.KueueVisibilityService
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Service %s/%s for Kueue's visibility API: %w", ns, name, err)
	}
	apis := agg.ApiregistrationV1().APIServices()
	for _, gv := range visibilityVersions {
		want := &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group, Labels: labels},
			Spec: apiregistrationv1.APIServiceSpec{
				Service:              &apiregistrationv1.ServiceReference{Namespace: ns, Name: name, Port: ptr.To[int32](443)},
				Group:                gv.Group,
				Version:              gv.Version,
				CABundle:             caBundle,
				GroupPriorityMinimum: 100,
				VersionPriority:      100,
			},
		}
		// On a cluster started again the APIService is still there, and
		// the aggregator's availability controller writes its status
		// (the old port no longer answers) while this updates its spec:
		// a conflict, tried again on the object as it now is.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			have, err := apis.Get(ctx, want.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = apis.Create(ctx, want, metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			have.Spec = want.Spec
			_, err = apis.Update(ctx, have, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("registering APIService %s: %w", want.Name, err)
		}
	}
	preferred := visibilityVersions[0].Version + "." + visibilityVersions[0].Group
	if err := retryFor(ctx, time.Minute, func() error {
		have, err := apis.Get(ctx, preferred, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range have.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				if c.Status == apiregistrationv1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("%s: %s", c.Reason, c.Message)
			}
		}
		return fmt.Errorf("not yet checked")
	}); err != nil {
		return fmt.Errorf("the aggregator does not find APIService %s available: %w", preferred, err)
	}
	return nil
}
