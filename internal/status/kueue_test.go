package status

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// A ClusterQueue's row: its workloads, and per GPU flavor what is used
// against the nominal quota, with what is borrowed; CPU and memory are
// not shown, and a flavor nothing uses reads 0.
func TestRenderQueues(t *testing.T) {
	gpu := func(flavor string, nominal int64) kueue.FlavorQuotas {
		return kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(flavor), Resources: []kueue.ResourceQuota{
			{Name: "nvidia.com/gpu", NominalQuota: *resource.NewQuantity(nominal, resource.DecimalSI)}}}
	}
	used := func(flavor string, total, borrowed int64) kueue.FlavorUsage {
		return kueue.FlavorUsage{Name: kueue.ResourceFlavorReference(flavor), Resources: []kueue.ResourceUsage{{
			Name: "nvidia.com/gpu", Total: *resource.NewQuantity(total, resource.DecimalSI), Borrowed: *resource.NewQuantity(borrowed, resource.DecimalSI)}}}
	}
	cq := kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: "team-b"},
		Spec: kueue.ClusterQueueSpec{CohortName: "retail", ResourceGroups: []kueue.ResourceGroup{
			{CoveredResources: []corev1.ResourceName{"cpu"}, Flavors: []kueue.FlavorQuotas{{Name: "default-flavor", Resources: []kueue.ResourceQuota{{Name: "cpu", NominalQuota: resource.MustParse("96")}}}}},
			{CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"}, Flavors: []kueue.FlavorQuotas{gpu("spot-gpu", 1), gpu("gpu", 1)}},
		}},
		Status: kueue.ClusterQueueStatus{PendingWorkloads: 2, AdmittedWorkloads: 3, FlavorsUsage: []kueue.FlavorUsage{used("spot-gpu", 2, 1)}},
	}
	var out bytes.Buffer
	if err := renderQueues(&out, []kueue.ClusterQueue{cq}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a title, a header and one row:\n%s", out.String())
	}
	if got := strings.Fields(lines[2]); strings.Join(got, " ") != "team-b retail 2 3 spot-gpu 2/1 (1 borrowed), gpu 0/1" {
		t.Errorf("row %q", lines[2])
	}
	out.Reset()
	if err := renderQueues(&out, nil); err != nil || out.Len() > 0 {
		t.Errorf("no queues: %q, %v; want nothing", out.String(), err)
	}
}
