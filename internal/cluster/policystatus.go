package cluster

import (
	"context"
	"time"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/util/wait"
	pluginvalidatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	k8sscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
	"k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus"
	"k8s.io/kubernetes/pkg/generated/openapi"
)

// policyStatusController is kube-controller-manager's controller of that
// name, which type-checks every ValidatingAdmissionPolicy against the
// kinds it matches and writes the warnings to status.typeChecking. berth
// turns it off in the controller manager and runs it itself, unchanged,
// once the cluster is ready: it decides nothing (admission does not wait
// for it), and type-checking berth's five policies is about two seconds
// of CPU, which during start-up was taken from the API server applying
// the blueprint on a two-core machine (0.7-1.0 s of a cold start).
const policyStatusController = "validatingadmissionpolicy-status-controller"

// startAfterReady starts the work that is no part of ready: the policy
// status controller, built as kube-controller-manager builds it.
func (c *Cluster) startAfterReady(ctx context.Context, client kubernetes.Interface) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	checker := &pluginvalidatingadmissionpolicy.TypeChecker{
		SchemaResolver: resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, k8sscheme.Scheme, apiextensionsscheme.Scheme).
			Combine(&resolver.ClientDiscoveryResolver{Discovery: client.Discovery()}),
		RestMapper: mapper,
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	policies := client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	ctl, err := validatingadmissionpolicystatus.NewController(factory.Admissionregistration().V1().ValidatingAdmissionPolicies(), policies, checker)
	if err != nil {
		return err
	}
	c.run(ctx, policyStatusController, func(ctx context.Context) error {
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		// As the controller manager does, so that kinds added later
		// (CRDs) are found.
		go wait.Until(mapper.Reset, 30*time.Second, ctx.Done())
		ctl.Run(ctx, 5) // the controller manager's default ConcurrentPolicySyncs
		return nil
	})
	return nil
}
