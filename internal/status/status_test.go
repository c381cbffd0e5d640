package status

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/objtest"
)

// A pool's requested resources are the sum of its nodes' pods' requests,
// counted as the scheduler counts them (an init container larger than the
// app's sets the pod's request); pods on no node or on a node of another
// pool do not count. A fake clientset ignores field selectors, so this
// shows the sums alone: which pods status reads (scheduled, not finished),
// its field selector's work, is tested on the API server in test/e2e
// (TestZoneSpread, with a succeeded and a failed pod on the pool).
func TestCollectRequestsByPool(t *testing.T) {
	node := func(name, pool string) *corev1.Node { return objtest.MakeNode(name).Pool(pool).CPU("8").Ready().Obj() }
	pod := func(name, node, cpu string) *objtest.PodWrapper {
		return objtest.MakePod("team-a", name).NodeName(node).CPU(cpu)
	}
	objs := []runtime.Object{
		node("cpu-0", "cpu"), node("cpu-1", "cpu"), node("gpu-0", "gpu"),
		pod("a", "cpu-0", "500m").Obj(),
		pod("b", "cpu-0", "250m").InitRequest(corev1.ResourceCPU, "2").Obj(), // its init container's 2 CPUs count
		pod("c", "cpu-1", "1").Obj(),
		pod("d", "gpu-0", "3").Obj(),
		pod("pending", "", "7").Obj(),
	}
	c := fake.NewClientset(objs...)
	sum, err := Collect(context.Background(), c, listing.FromAPI(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "3500m", "gpu": "3"}
	if len(sum.Pools) != len(want) {
		t.Fatalf("pools = %+v, want %v", sum.Pools, want)
	}
	for _, p := range sum.Pools {
		got := p.Requested[corev1.ResourceCPU]
		if got.Cmp(resource.MustParse(want[p.Name])) != 0 {
			t.Errorf("pool %s requests %s CPU, want %s", p.Name, got.String(), want[p.Name])
		}
	}
}

// A scoped quota says which pods it counts: the guard that keeps a team's
// pods out of the system's classes is pods 0 of 0, which read alone
// looks like a team that may run nothing.
func TestQuotaScope(t *testing.T) {
	guard := &corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
		ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"system-cluster-critical", "system-node-critical"},
	}}}}
	if got, want := QuotaScope(guard), "PriorityClass in system-cluster-critical, system-node-critical"; got != want {
		t.Errorf("scope %q; want %q", got, want)
	}
	if got := QuotaScope(&corev1.ResourceQuotaSpec{}); got != "" {
		t.Errorf("an unscoped quota's scope is %q; want none", got)
	}
	var out strings.Builder
	q := Quota{Team: "team-a", Namespace: "team-a", Name: "team-classes", Scope: QuotaScope(guard),
		Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if err := renderQuotas(&out, []Quota{q}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "team-classes (pods of PriorityClass in system-cluster-critical, system-node-critical)") {
		t.Errorf("status does not say what the quota counts:\n%s", out.String())
	}
}
