package simulate

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
)

func testBlueprint(t testing.TB) *v1alpha1.Blueprint {
	t.Helper()
	bp, _, err := blueprint.Parse("b.yaml", []byte(`
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: b}
spec:
  zones: [zone-1, zone-2]
  pools:
  - {name: sys, mode: System, machine: {cpu: 4, memory: 16Gi}}
  - {name: gpu, machine: {cpu: 32, memory: 128Gi, gpu: {count: 4, product: NVIDIA-A100}}, autoscale: {min: 0, max: 3}, taints: ["nvidia.com/gpu=true:NoSchedule"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

func pool(bp *v1alpha1.Blueprint, name string) *v1alpha1.Pool {
	for i := range bp.Spec.Pools {
		if bp.Spec.Pools[i].Name == name {
			return &bp.Spec.Pools[i]
		}
	}
	panic("no pool " + name)
}

func gpuPods(n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, objtest.MakePod("team-a", fmt.Sprintf("train-%d", i)).GPU("1").Tolerate("nvidia.com/gpu").Owner("ReplicaSet", "job-1").Obj())
	}
	return pods
}

func TestPackFiveOneGPUPodsOntoFourGPUNodes(t *testing.T) {
	ctx := context.Background()
	bp := testBlueprint(t)
	s, err := New(ctx, Cluster{Nodes: []*corev1.Node{objtest.MakeNode("sys-0").Zone("zone-1").Obj()}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Pack(ctx, gpuPods(5), PoolTemplate(bp, pool(bp, "gpu"), 0), 3)
	if err != nil {
		t.Fatal(err)
	}
	if p.Nodes != 2 {
		t.Errorf("Nodes = %d, want 2", p.Nodes)
	}
	got := map[string]int{}
	for _, pl := range p.Placements {
		got[pl.Node]++
	}
	if diff := cmp.Diff(map[string]int{"gpu-0": 4, "gpu-1": 1}, got); diff != "" {
		t.Errorf("pods per new node (-want +got):\n%s", diff)
	}
	if len(p.Misfits) != 0 {
		t.Errorf("Misfits = %v, want none", p.Misfits)
	}
	// Pack leaves the simulation as it found it.
	res, err := s.Check(ctx, gpuPods(1)[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sys-0: NodeResourcesFit: Insufficient nvidia.com/gpu"}, verdicts(res)); diff != "" {
		t.Errorf("after Pack (-want +got):\n%s", diff)
	}
}

func TestPackStopsAtMax(t *testing.T) {
	ctx := context.Background()
	bp := testBlueprint(t)
	s, err := New(ctx, Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Pack(ctx, gpuPods(10), PoolTemplate(bp, pool(bp, "gpu"), 0), 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Nodes != 2 || len(p.Placements) != 8 || len(p.Misfits) != 2 {
		t.Fatalf("got %d nodes, %d placed, %d misfits; want 2, 8, 2", p.Nodes, len(p.Placements), len(p.Misfits))
	}
	// A misfit that fits an empty node was left out by max alone.
	if v := p.Misfits[0].Verdict; !v.Fits() {
		t.Errorf("misfit's verdict on an empty node = %v, want fits", v)
	}
}

func TestPackOpensNoNodeForAPodNoNodeHolds(t *testing.T) {
	ctx := context.Background()
	bp := testBlueprint(t)
	s, err := New(ctx, Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	pods := []*corev1.Pod{
		objtest.MakePod("team-a", "no-toleration").GPU("1").Obj(),
		objtest.MakePod("team-a", "too-big").GPU("8").Tolerate("nvidia.com/gpu").Obj(),
		objtest.MakePod("team-a", "wrong-pool").NodeSelector("agentpool", "cpu").Tolerate("nvidia.com/gpu").Obj(),
	}
	p, err := s.Pack(ctx, pods, PoolTemplate(bp, pool(bp, "gpu"), 0), 3)
	if err != nil {
		t.Fatal(err)
	}
	if p.Nodes != 0 {
		t.Errorf("Nodes = %d, want 0", p.Nodes)
	}
	var got []string
	for _, m := range p.Misfits {
		got = append(got, m.Pod.Name+" on "+m.Verdict.String())
	}
	want := []string{
		"no-toleration on gpu-0: TaintToleration: node(s) had untolerated taint(s)",
		"too-big on gpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu",
		"wrong-pool on gpu-0: NodeAffinity: node(s) didn't match Pod's node affinity/selector",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("misfits (-want +got):\n%s", diff)
	}
}

func TestPackSpreadsOverExistingNodes(t *testing.T) {
	// Zone spread counts the pods already running: with two web pods in
	// zone-1 and maxSkew 1, the pool's first new node (zone-1) takes no
	// web pod, so the pool must grow by two to reach its zone-2 node.
	ctx := context.Background()
	bp := testBlueprint(t)
	sys := pool(bp, "sys")
	s, err := New(ctx, Cluster{
		Nodes: []*corev1.Node{objtest.MakeNode("old-0").Zone("zone-1").Obj(), objtest.MakeNode("old-1").Zone("zone-2").CPU("1").Obj()},
		Pods: []*corev1.Pod{
			objtest.MakePod("team-a", "web-0").Label("app", "web").On("old-0").Obj(),
			objtest.MakePod("team-a", "web-1").Label("app", "web").On("old-0").Obj(),
			objtest.MakePod("team-a", "filler").CPU("1").On("old-1").Obj(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	pods := []*corev1.Pod{objtest.MakePod("team-a", "web-2").Label("app", "web").Spread(corev1.LabelTopologyZone, 1, "web").Obj()}
	p, err := s.Pack(ctx, pods, PoolTemplate(bp, sys, 0), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Placements) != 1 || p.Placements[0].Node != "sys-1" || p.Nodes != 2 {
		t.Fatalf("placements = %d, nodes = %d; want web-2 on sys-1 (zone-2), two nodes", len(p.Placements), p.Nodes)
	}
}

func TestPlace(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Cluster{Nodes: []*corev1.Node{
		objtest.MakeNode("gpu-0").Zone("zone-1").GPUs("2").Taint("nvidia.com/gpu=true:NoSchedule").Obj(),
		objtest.MakeNode("cpu-0").Zone("zone-1").Obj(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	placed, unplaced, err := s.Place(ctx, gpuPods(5))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range placed {
		got = append(got, p.Pod.Name+"→"+p.Node)
	}
	if diff := cmp.Diff([]string{"train-0→gpu-0", "train-1→gpu-0"}, got); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
	if len(unplaced) != 3 {
		t.Errorf("unplaced = %d pods, want 3", len(unplaced))
	}
	// Placed pods stay bound: the GPU node is now full.
	res, err := s.Check(ctx, gpuPods(1)[0])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu", "cpu-0: NodeResourcesFit: Insufficient nvidia.com/gpu"}
	if diff := cmp.Diff(want, verdicts(res)); diff != "" {
		t.Errorf("after Place (-want +got):\n%s", diff)
	}
}

func verdicts(r *Result) []string {
	var out []string
	for _, v := range r.Nodes {
		out = append(out, v.String())
	}
	return out
}
