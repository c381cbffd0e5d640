package simulate

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestFitAfter(t *testing.T) {
	ctx := context.Background()
	// The old node goes; the new one carries a taint the pod does not
	// tolerate.
	tainted := makeNode("gpu-g2-0", "zone-1").taint("gpu", "new").obj()
	web := makePod("web-1").controller("rs").obj()
	stuck, err := FitAfter(ctx, []*corev1.Node{tainted}, nil, []*corev1.Pod{web})
	if err != nil {
		t.Fatal(err)
	}
	if got := stuck[web.UID]["gpu-g2-0"]; got != "it does not tolerate the taint gpu=new:NoSchedule" {
		t.Errorf("verdict on the new node = %q", got)
	}

	// Resources count: an 8-CPU node holds one of two 6-CPU pods, and
	// what already runs there counts.
	a := makePod("a").request(corev1.ResourceCPU, "6").controller("rs").obj()
	b := makePod("b").request(corev1.ResourceCPU, "6").controller("rs").obj()
	stuck, err = FitAfter(ctx, []*corev1.Node{makeNode("n", "zone-1").obj()}, nil, []*corev1.Pod{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stuck[a.UID]; ok || len(stuck) != 1 || !strings.Contains(stuck[b.UID]["n"], "NodeResourcesFit: Insufficient cpu") {
		t.Errorf("stuck = %v, want b alone, short of cpu", stuck)
	}
	stuck, err = FitAfter(ctx, []*corev1.Node{makeNode("n", "zone-1").obj()}, []*corev1.Pod{makePod("big").request(corev1.ResourceCPU, "7").on("n").obj()}, []*corev1.Pod{a})
	if err != nil || len(stuck) != 1 {
		t.Errorf("a displaced pod fits beside a 7-CPU pod on 8 CPUs: %v, %v", stuck, err)
	}
}
