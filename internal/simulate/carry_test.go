package simulate

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/objtest"
)

// Carrying a group's PreFilter state from pod to pod (AddPod) gives the
// same placements, packings and misfits as running PreFilter afresh for
// every pod, for the plugins whose state depends on other pods: zone
// spread, hostname spread, and required anti-affinity.
func TestCarriedStateChangesNoAnswer(t *testing.T) {
	bp := testBlueprint(t)
	var nodes []*corev1.Node
	var bound []*corev1.Pod
	for i := range 6 {
		n := objtest.MakeNode(fmt.Sprintf("n%d", i)).Zone(fmt.Sprintf("zone-%d", i%2+1)).CPU("4").Obj()
		nodes = append(nodes, n)
		// Existing pods of the spread app, uneven over the zones.
		if i < 3 {
			bound = append(bound, objtest.MakePod("team-a", fmt.Sprintf("old-%d", i)).Label("app", "web").On(n.Name).Obj())
		}
	}
	group := func(prefix string, n int, shape func(*objtest.PodWrapper) *objtest.PodWrapper) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, shape(objtest.MakePod("team-a", fmt.Sprintf("%s-%d", prefix, i)).Owner("ReplicaSet", "rs-"+prefix)).Obj())
		}
		return out
	}
	pending := append(append(append(
		group("web", 40, func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.Label("app", "web").CPU("500m").Spread(corev1.LabelTopologyZone, 1, "web")
		}),
		group("host", 12, func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.Label("app", "host").CPU("250m").Spread(corev1.LabelHostname, 1, "host")
		})...),
		group("lone", 9, func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.Label("app", "lone").AntiAffinity(corev1.LabelHostname, "lone")
		})...),
		group("gpu", 6, func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.Label("app", "g").GPU("1").Tolerate("nvidia.com/gpu").Spread(corev1.LabelTopologyZone, 1, "g")
		})...)

	run := func(noCarry bool) (placed []string, packed []string) {
		ctx := context.Background()
		s, err := New(ctx, Cluster{Nodes: nodes, Pods: bound})
		if err != nil {
			t.Fatal(err)
		}
		s.noCarry = noCarry
		pl, left, err := s.Place(ctx, pending)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pl {
			placed = append(placed, p.Pod.Name+"→"+p.Node)
		}
		pk, err := s.Pack(ctx, left, PoolTemplate(bp, pool(bp, "gpu"), 0), 3)
		if err != nil {
			t.Fatal(err)
		}
		packed = append(packed, fmt.Sprintf("nodes=%d", pk.Nodes))
		for _, p := range pk.Placements {
			packed = append(packed, p.Pod.Name+"→"+p.Node)
		}
		for _, m := range pk.Misfits {
			packed = append(packed, m.Pod.Name+"✗"+m.Verdict.Plugin)
		}
		return placed, packed
	}
	freshPlaced, freshPacked := run(true)
	carriedPlaced, carriedPacked := run(false)
	if diff := cmp.Diff(freshPlaced, carriedPlaced); diff != "" {
		t.Errorf("Place with carried state (-fresh +carried):\n%s", diff)
	}
	if diff := cmp.Diff(freshPacked, carriedPacked); diff != "" {
		t.Errorf("Pack with carried state (-fresh +carried):\n%s", diff)
	}
	// The case must exercise what it claims: the spread left pods over,
	// and the template took some of them.
	if len(freshPlaced) == 0 || len(freshPacked) < 2 {
		t.Fatalf("the case placed %d and packed %v: not a test of carrying", len(freshPlaced), freshPacked)
	}
	t.Logf("placed %d; packed %v", len(freshPlaced), freshPacked)
}
