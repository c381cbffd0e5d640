package simulate

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/objtest"
)

func TestFitAfter(t *testing.T) {
	ctx := context.Background()
	// The old node goes; the new one carries a taint the pod does not
	// tolerate.
	tainted := objtest.MakeNode("gpu-g2-0").Zone("zone-1").Taint("gpu=new:NoSchedule").Obj()
	web := objtest.MakePod("team-a", "web-1").Owner("ReplicaSet", "rs").Obj()
	stuck, err := FitAfter(ctx, []*corev1.Node{tainted}, nil, []*corev1.Pod{web})
	if err != nil {
		t.Fatal(err)
	}
	if got := stuck[web.UID]["gpu-g2-0"]; got != "it does not tolerate the taint gpu=new:NoSchedule" {
		t.Errorf("verdict on the new node = %q", got)
	}

	// Resources count: an 8-CPU node holds one of two 6-CPU pods, and
	// what already runs there counts.
	a := objtest.MakePod("team-a", "a").CPU("6").Owner("ReplicaSet", "rs").Obj()
	b := objtest.MakePod("team-a", "b").CPU("6").Owner("ReplicaSet", "rs").Obj()
	stuck, err = FitAfter(ctx, []*corev1.Node{objtest.MakeNode("n").Zone("zone-1").Obj()}, nil, []*corev1.Pod{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stuck[a.UID]; ok || len(stuck) != 1 || !strings.Contains(stuck[b.UID]["n"], "NodeResourcesFit: Insufficient cpu") {
		t.Errorf("stuck = %v, want b alone, short of cpu", stuck)
	}
	stuck, err = FitAfter(ctx, []*corev1.Node{objtest.MakeNode("n").Zone("zone-1").Obj()}, []*corev1.Pod{objtest.MakePod("team-a", "big").CPU("7").On("n").Obj()}, []*corev1.Pod{a})
	if err != nil || len(stuck) != 1 {
		t.Errorf("a displaced pod fits beside a 7-CPU pod on 8 CPUs: %v, %v", stuck, err)
	}
}
