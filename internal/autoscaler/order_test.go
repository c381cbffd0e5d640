package autoscaler

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/internal/pools"
)

// TestNodesDueTogetherRegisterInNameOrder: nodes asked for at once and
// due at one moment register in the order of their names, whichever of
// their timers runs first (here, the one asked for last).
func TestNodesDueTogetherRegisterInNameOrder(t *testing.T) {
	w := newWorld(t, cpuAndGPU, 1)
	w.c.groups = w.groups
	g := w.group(w.view(), "gpu")
	due := t0.Add(10 * time.Minute)
	for _, i := range []int{2, 0, 1} {
		w.c.mu.Lock()
		w.c.provision(context.Background(), g, &upcoming{node: pools.NewNode(w.bp, w.pool("gpu"), i), requested: t0, due: due})
		w.c.mu.Unlock()
	}
	w.client.ClearActions()
	w.clock.Step(10 * time.Minute)

	var created []string
	for _, a := range w.client.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetResource().Resource == "nodes" {
			created = append(created, c.GetObject().(*corev1.Node).Name)
		}
	}
	if want := []string{"gpu-0", "gpu-1", "gpu-2"}; !slices.Equal(created, want) {
		t.Errorf("nodes registered in the order %v, want %v", created, want)
	}
}

// TestSortedListsByNamespaceAndName: the scan's view lists a store's
// objects in one order, whatever order the store keeps them in.
func TestSortedListsByNamespaceAndName(t *testing.T) {
	want := []string{"team-a/a", "team-a/b", "team-b/a", "team-b/c"}
	for seed := range uint64(5) {
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		order := slices.Clone(want)
		rand.New(rand.NewPCG(seed, 1)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, key := range order {
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			if err := store.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for _, p := range sorted[*corev1.Pod](store) {
			got = append(got, p.Namespace+"/"+p.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("added in the order %v: listed %v, want %v", order, got, want)
		}
	}
}
