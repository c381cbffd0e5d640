package simulate

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
)

// BenchmarkScan is one autoscaler scan at issue 11's scale: 1,000 nodes
// (900 CPU nodes over three zones, 100 tainted 4-GPU nodes, all nearly
// full with 7,300 bound pods) and 5,000 pending pods from 50
// Deployments (10 spread over zones, 10 asking for a GPU). The scan
// builds the simulation, places the pending pods that fit the nodes as
// they are, and packs the rest onto each pool's new nodes. Target: 1 s.
func BenchmarkScan(b *testing.B) {
	bp := benchBlueprint(b)
	cluster, pending := benchCluster()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := New(ctx, cluster)
		if err != nil {
			b.Fatal(err)
		}
		_, unplaced, err := s.Place(ctx, pending)
		if err != nil {
			b.Fatal(err)
		}
		for i := range bp.Spec.Pools {
			p := &bp.Spec.Pools[i]
			if _, err := s.Pack(ctx, unplaced, PoolTemplate(bp, p, 1000), 100); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchBlueprint(b *testing.B) *v1alpha1.Blueprint {
	bp, _, err := blueprint.Parse("b.yaml", []byte(`
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: b}
spec:
  zones: [zone-1, zone-2, zone-3]
  pools:
  - {name: cpu, mode: System, machine: {cpu: 8, memory: 32Gi}, autoscale: {min: 3, max: 1100}}
  - {name: gpu, machine: {cpu: 32, memory: 128Gi, gpu: {count: 4, product: NVIDIA-A100}}, autoscale: {min: 0, max: 200}, taints: ["nvidia.com/gpu=true:NoSchedule"]}
`))
	if err != nil {
		b.Fatal(err)
	}
	return bp
}

func benchCluster() (Cluster, []*corev1.Pod) {
	var c Cluster
	zones := []string{"zone-1", "zone-2", "zone-3"}
	for i := range 900 {
		n := objtest.MakeNode(fmt.Sprintf("cpu-%d", i)).Zone(zones[i%3]).Obj()
		c.Nodes = append(c.Nodes, n)
		for j := range 7 {
			c.Pods = append(c.Pods, objtest.MakePod("team-a", fmt.Sprintf("run-%d-%d", i, j)).Label("app", fmt.Sprintf("run-%d", j)).
				CPU("1").Owner("ReplicaSet", fmt.Sprintf("rs-run-%d", j)).On(n.Name).Obj())
		}
	}
	for i := range 100 {
		n := objtest.MakeNode(fmt.Sprintf("gpu-%d", i)).Zone(zones[i%3]).GPUs("4").Taint("nvidia.com/gpu=true:NoSchedule").Obj()
		c.Nodes = append(c.Nodes, n)
		for j := range 4 {
			c.Pods = append(c.Pods, objtest.MakePod("team-a", fmt.Sprintf("train-%d-%d", i, j)).GPU("1").
				Tolerate("nvidia.com/gpu").Owner("ReplicaSet", "job-old").On(n.Name).Obj())
		}
	}
	var pending []*corev1.Pod
	for d := range 50 {
		app := fmt.Sprintf("app-%d", d)
		for r := range 100 {
			p := objtest.MakePod("team-a", fmt.Sprintf("%s-%d", app, r)).Label("app", app).Owner("ReplicaSet", "rs-"+app)
			switch {
			case d < 10:
				p.GPU("1").Tolerate("nvidia.com/gpu")
			case d < 20:
				p.CPU("500m").Spread(corev1.LabelTopologyZone, 1, app)
			default:
				p.CPU("500m")
			}
			pending = append(pending, p.Obj())
		}
	}
	return c, pending
}
