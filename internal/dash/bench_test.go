package dash

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
)

// BenchmarkReadAndRender1000Nodes20000Pods is one reading of a cluster
// of 1,000 nodes and 20,000 running pods (from a fake clientset: the
// server's own cost, without the API server's) and the rendering of the
// overview and waiting pages from it.
func BenchmarkReadAndRender1000Nodes20000Pods(b *testing.B) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		b.Fatal(err)
	}
	objs := make([]runtime.Object, 0, 21000)
	for i := range 1000 {
		objs = append(objs, objtest.MakeNode(fmt.Sprintf("cpu-%04d", i)).Pool("cpu").CPU("16").Memory("64Gi").Ready().Obj())
	}
	for i := range 20000 {
		objs = append(objs, objtest.MakePod("team-a", fmt.Sprintf("p-%05d", i)).CPU("100m").Memory("128Mi").On(fmt.Sprintf("cpu-%04d", i%1000)).Ready().Obj())
	}
	c := fake.NewClientset(objs...)
	s, err := New(Options{Client: c, Blueprint: bp, Listen: "127.0.0.1:8470"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.cache.factory.Start(ctx.Done())
	h := s.Handler()
	for b.Loop() {
		start := time.Now()
		if err := s.refresh(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/reading")
		for _, p := range []string{"/", "/waiting"} {
			if w := get(b, h, "127.0.0.1:8470", p, nil); w.Code != http.StatusOK {
				b.Fatalf("GET %s: %d", p, w.Code)
			}
		}
	}
}
