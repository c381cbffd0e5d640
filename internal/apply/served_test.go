package apply

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"berth.io/berth/internal/compile"
)

// A cluster older than 1.36 serves ValidatingAdmissionPolicy but not
// MutatingAdmissionPolicy in admissionregistration.k8s.io/v1: apply must
// see the difference and leave out only the mutating policies.
func TestServedKindsOnAClusterWithoutMutatingPolicies(t *testing.T) {
	c := fake.NewClientset()
	c.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "namespaces"}, {Name: "resourcequotas"}, {Name: "limitranges"}}},
		{GroupVersion: "scheduling.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "priorityclasses"}}},
		{GroupVersion: "policy/v1", APIResources: []metav1.APIResource{{Name: "poddisruptionbudgets"}}},
		{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"}, {Name: "validatingwebhookconfigurations"},
		}},
	}
	served, err := servedKinds(c, compile.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Namespace", "PriorityClass", "ResourceQuota", "LimitRange", "PodDisruptionBudget", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !served[kind] {
			t.Errorf("%s reported as not served", kind)
		}
	}
	for _, kind := range []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"} {
		if served[kind] {
			t.Errorf("%s reported as served by a cluster that lacks it", kind)
		}
		if unsupportedMeans[kind] == "" {
			t.Errorf("no explanation for a cluster without %s", kind)
		}
	}
}
