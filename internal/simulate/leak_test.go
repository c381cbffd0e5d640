package simulate

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/objtest"
)

// Simulators come and go with every autoscaler scan: building one must
// leave no goroutine behind once it is dropped (the scheduler framework
// starts a metrics recorder of its own for each).
func TestSimulatorsLeaveNoGoroutines(t *testing.T) {
	ctx := context.Background()
	cluster := Cluster{Nodes: []*corev1.Node{objtest.MakeNode("cpu-0").Obj()}}
	build := func() {
		s, err := New(ctx, cluster)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Clone(ctx); err != nil {
			t.Fatal(err)
		}
	}
	build() // what is started once per process (the shared recorder)
	before := runtime.NumGoroutine()
	for range 50 {
		build()
	}
	// A stopped recorder's goroutine notices within its second's sleep.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		t.Errorf("%d goroutines after building 50 simulators and their clones, %d before", n, before)
	}
}
