package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"berth.io/berth/api/v1alpha1"
)

// A NodePool's row holds what it launched against its limits, its
// consolidation and budgets; a NodeClaim's its pool, type, capacity,
// zone and node.
func TestRenderKarpenter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	after := 30 * time.Second
	np := karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "spot-gpu"}}
	np.Spec.Limits = karpv1.Limits{"cpu": resource.MustParse("96"), "memory": resource.MustParse("384Gi"), "nvidia.com/gpu": resource.MustParse("4")}
	np.Spec.Disruption = karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty,
		ConsolidateAfter: karpv1.NillableDuration{Duration: &after}, Budgets: []karpv1.Budget{{Nodes: "0"}}}
	np.Status.Resources = corev1.ResourceList{"cpu": resource.MustParse("24"), "memory": resource.MustParse("96Gi"), "nvidia.com/gpu": resource.MustParse("1"), "nodes": resource.MustParse("1")}
	nc := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "spot-gpu-x7k2q", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)), Labels: map[string]string{
		v1alpha1.LabelKarpenterNodePool: "spot-gpu", corev1.LabelInstanceTypeStable: "g6.8xlarge", v1alpha1.LabelCapacityType: "spot", corev1.LabelTopologyZone: "zone-2"}}}
	nc.Status.NodeName = "spot-gpu-x7k2q"
	var out bytes.Buffer
	if err := renderKarpenter(&out, &Karpenter{NodePools: []karpv1.NodePool{np}, NodeClaims: []karpv1.NodeClaim{nc}}, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"spot-gpu", "1", "24/96", "96Gi/384Gi", "1/4", "WhenEmpty after 30s", "nodes 0"},
		{"spot-gpu-x7k2q", "spot-gpu", "g6.8xlarge", "spot", "zone-2", "spot-gpu-x7k2q", "Unknown", "1m0s"},
	} {
		if !hasRow(out.String(), want) {
			t.Errorf("no row %q in:\n%s", strings.Join(want, "  "), out.String())
		}
	}
}

func hasRow(out string, cells []string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(cells, " ") {
			return true
		}
	}
	return false
}
