package why

import (
	"fmt"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkExplain1000Nodes is the analysis and the text alone (no API
// calls): 1,000 nodes in 10 pools, 10 pods on each node, and a pod that
// fits none of them.
func BenchmarkExplain1000Nodes(b *testing.B) {
	var ns []corev1.Node
	var pods []corev1.Pod
	for i := range 1000 {
		name := fmt.Sprintf("n-%d", i)
		ns = append(ns, makeNode(name, fmt.Sprintf("pool-%d", i%10)).zone(fmt.Sprintf("zone-%d", i%3)).obj())
		for j := range 10 {
			pods = append(pods, makePod("ns", fmt.Sprintf("p-%d-%d", i, j)).label("app", "web").request(corev1.ResourceCPU, "1").on(name).obj())
		}
	}
	pod := makePod("ns", "big").label("app", "web").request(corev1.ResourceCPU, "12").ptr()
	b.ReportAllocs()
	for b.Loop() {
		s := snapshotOf(ns, pods...)
		v := Explain(s, pod)
		if err := Render(io.Discard, &v); err != nil {
			b.Fatal(err)
		}
	}
}
