package kueue

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/crds"
)

// manifests are copies of the Kueue module's config/components: the CRDs
// (crd/bases) and the webhook configurations (webhook/manifests.yaml).
// `go test ./internal/kueue -update` copies them again; the test fails
// while they and the module part.
//
//go:embed manifests
var manifests embed.FS

// converted are the CRDs whose versions Kueue's conversion webhook
// converts: those config/components/crd/kustomization.yaml patches with
// webhook_in_*.yaml.
var converted = []string{"localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters"}

// webhookGroups are the API groups whose webhooks berth registers: Kueue's
// own kinds and batch (the Job integration, the one berth enables). The
// other integrations' hooks answer "allowed" when their integration is
// off (jobframework's noop webhooks); registering them would only put a
// call to them in front of every Pod, Deployment and StatefulSet.
var webhookGroups = []string{"kueue.x-k8s.io", "batch"}

// CRDs are Kueue's CRDs, as the module berth is built with has them.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := manifests.ReadDir("manifests/crd")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		data, err := manifests.ReadFile(path.Join("manifests/crd", e.Name()))
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(crd); err != nil {
			return nil, fmt.Errorf("reading Kueue's CRD %s: %w", e.Name(), err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// webhookConfigurations are Kueue's webhook configurations for
// webhookGroups, each hook's clientConfig the URL url gives for its
// service's path, trusting caBundle.
func webhookConfigurations(url func(path string) string, caBundle []byte) (*admissionv1.MutatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfiguration, error) {
	data, err := manifests.ReadFile("manifests/webhooks.yaml")
	if err != nil {
		return nil, nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	mutating, validating := &admissionv1.MutatingWebhookConfiguration{}, &admissionv1.ValidatingWebhookConfiguration{}
	if err := dec.Decode(mutating); err != nil {
		return nil, nil, fmt.Errorf("reading Kueue's mutating webhooks: %w", err)
	}
	if err := dec.Decode(validating); err != nil {
		return nil, nil, fmt.Errorf("reading Kueue's validating webhooks: %w", err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("Kueue's webhook manifests hold more than two configurations")
	}
	client := func(c *admissionv1.WebhookClientConfig) {
		p := ptr.Deref(c.Service.Path, "/")
		*c = admissionv1.WebhookClientConfig{URL: ptr.To(url(p)), CABundle: caBundle}
	}
	mutating.Name = v1alpha1.KueueMutatingWebhooks
	mutating.Webhooks = slices.DeleteFunc(mutating.Webhooks, func(h admissionv1.MutatingWebhook) bool { return !inGroups(h.Rules) })
	for i := range mutating.Webhooks {
		client(&mutating.Webhooks[i].ClientConfig)
	}
	validating.Name = v1alpha1.KueueValidatingWebhooks
	validating.Webhooks = slices.DeleteFunc(validating.Webhooks, func(h admissionv1.ValidatingWebhook) bool { return !inGroups(h.Rules) })
	for i := range validating.Webhooks {
		client(&validating.Webhooks[i].ClientConfig)
	}
	return mutating, validating, nil
}

func inGroups(rules []admissionv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if slices.Contains(webhookGroups, g) {
				return true
			}
		}
	}
	return false
}

// installCRDs creates or updates Kueue's CRDs and waits until the API
// server serves them and its discovery lists them: Kueue's manager maps
// every kind through discovery as its controllers start, and one it
// cannot map stops it. An update keeps the conversion webhook
// registerWebhooks set: until Kueue's manager serves it again, the
// stored version (v1beta2, which Kueue reads) needs no conversion.
func installCRDs(ctx context.Context, cfg *rest.Config) error {
	list, err := CRDs()
	if err != nil {
		return err
	}
	if err := crds.Install(ctx, cfg, "Kueue's", list, func(stored, updated *apiextensionsv1.CustomResourceDefinition) {
		updated.Spec.Conversion = stored.Spec.Conversion
	}); err != nil {
		return err
	}
	return crds.Discovered(ctx, cfg, "Kueue's", list)
}

// registerWebhooks points the API server at Kueue's webhooks on srv: the
// admission webhooks (webhookConfigurations) and the conversion webhook
// of the converted CRDs. Every hook registered must be one Kueue's
// manager serves.
func registerWebhooks(ctx context.Context, cfg *rest.Config, srv *loopbackServer, caBundle []byte) error {
	mutating, validating, err := webhookConfigurations(srv.URL, caBundle)
	if err != nil {
		return err
	}
	served := srv.Paths()
	for _, h := range mutating.Webhooks {
		if err := servedPath(served, h.Name, *h.ClientConfig.URL, srv); err != nil {
			return err
		}
	}
	for _, h := range validating.Webhooks {
		if err := servedPath(served, h.Name, *h.ClientConfig.URL, srv); err != nil {
			return err
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	hooks := client.AdmissionregistrationV1()
	if err := createOrUpdate(ctx, hooks.MutatingWebhookConfigurations(), mutating); err != nil {
		return fmt.Errorf("registering Kueue's mutating webhooks: %w", err)
	}
	if err := createOrUpdate(ctx, hooks.ValidatingWebhookConfigurations(), validating); err != nil {
		return fmt.Errorf("registering Kueue's validating webhooks: %w", err)
	}

	const convert = "/convert"
	if !slices.Contains(served, convert) {
		return fmt.Errorf("Kueue's manager serves no conversion webhook at %s, which its CRDs name", convert)
	}
	ext, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := ext.ApiextensionsV1().CustomResourceDefinitions()
	for _, resource := range converted {
		name := resource + ".kueue.x-k8s.io"
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(srv.URL(convert)), CABundle: caBundle},
					ConversionReviewVersions: []string{"v1"},
				},
			}
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{FieldManager: v1alpha1.FieldManager})
			return err
		}); err != nil {
			return fmt.Errorf("pointing Kueue's CRD %s at its conversion webhook: %w", name, err)
		}
	}
	return nil
}

// clusterAPI is a client of one cluster-scoped kind.
type clusterAPI[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// createOrUpdate writes obj as it is, over the one the cluster has.
func createOrUpdate[T metav1.Object](ctx context.Context, api clusterAPI[T], obj T) error {
	old, err := api.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case err == nil:
		obj.SetResourceVersion(old.GetResourceVersion())
		_, err = api.Update(ctx, obj, metav1.UpdateOptions{FieldManager: v1alpha1.FieldManager})
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, obj, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
	}
	return err
}

func servedPath(served []string, hook, url string, srv *loopbackServer) error {
	for _, p := range served {
		if srv.URL(p) == url {
			return nil
		}
	}
	return fmt.Errorf("Kueue's webhook %s (%s) is in its manifests but its manager serves nothing there: the manifests and the module part (go test ./internal/kueue -update)", hook, url)
}
