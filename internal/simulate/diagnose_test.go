package simulate

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
)

// failures writes each node's failures as "node: Plugin, Plugin".
func failures(ds []Diagnosis) []string {
	var out []string
	for _, d := range ds {
		s := d.Node.Name + ":"
		for _, f := range d.Failures {
			s += " " + f.Plugin
		}
		out = append(out, s)
	}
	return out
}

func TestDiagnoseRunsEveryFilter(t *testing.T) {
	ctx := context.Background()
	sim, err := New(ctx, Cluster{
		Nodes: []*corev1.Node{
			objtest.MakeNode("gpu-0").Zone("zone-1").Taint("gpu=true:NoSchedule").GPUs("1").Obj(),
			objtest.MakeNode("gpu-1").Zone("zone-1").GPUs("1").Cordon().Obj(),
			objtest.MakeNode("cpu-0").Zone("zone-1").Obj(),
		},
		Pods: []*corev1.Pod{objtest.MakePod("team-a", "held").GPU("1").Tolerate("gpu").On("gpu-0").Obj()},
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := objtest.MakePod("team-a", "train").GPU("1").Obj()
	ds, err := sim.Diagnose(ctx, pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"gpu-0: TaintToleration NodeResourcesFit",
		"gpu-1: NodeUnschedulable",
		"cpu-0: NodeResourcesFit",
	}
	if d := cmp.Diff(want, failures(ds)); d != "" {
		t.Errorf("failures (-want +got):\n%s", d)
	}
	if ir := ds[0].Insufficient; len(ir) != 1 || ir[0].ResourceName != objtest.GPU || ir[0].Used != 1 || ir[0].Capacity != 1 {
		t.Errorf("gpu-0 insufficient = %+v", ir)
	}

	// A pod nominated to cpu-0 holds its CPUs.
	other := objtest.MakePod("team-a", "first").CPU("8").Obj()
	ds, err = sim.Diagnose(ctx, objtest.MakePod("team-a", "second").CPU("1").Obj(), []Placement{{Pod: other, Node: "cpu-0"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(ds)[2]; got != "cpu-0: NodeResourcesFit" {
		t.Errorf("with a nominated pod: %s", got)
	}
}

func TestDiagnoseTemplate(t *testing.T) {
	ctx := context.Background()
	bp, _, err := blueprint.Parse("t.yaml", []byte(`apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: t}
spec:
  zones: [zone-1]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1}
  - {name: gpu, machine: {cpu: 8, memory: 32Gi, gpu: {count: 1, product: NVIDIA-L4}}, autoscale: {min: 0, max: 2}, taints: ["gpu=true:NoSchedule"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(ctx, Cluster{Nodes: []*corev1.Node{objtest.MakeNode("cpu-0").Zone("zone-1").Obj()}})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := PoolTemplate(bp, &bp.Spec.Pools[1], 0)
	d, err := sim.DiagnoseTemplate(ctx, objtest.MakePod("team-a", "train").GPU("1").Obj(), tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures([]Diagnosis{d}); got[0] != "gpu-0: TaintToleration" {
		t.Errorf("template: %s", got[0])
	}
	d, err = sim.DiagnoseTemplate(ctx, objtest.MakePod("team-a", "train").GPU("1").Tolerate("gpu").Obj(), tmpl)
	if err != nil || !d.Fits() {
		t.Errorf("tolerating pod on the template: %+v, %v", d.Failures, err)
	}
	ds, err := sim.Diagnose(ctx, objtest.MakePod("team-a", "x").Obj(), nil)
	if err != nil || len(ds) != 1 {
		t.Errorf("the template stayed in the simulation: %v, %v", failures(ds), err)
	}
}

func TestTrial(t *testing.T) {
	ctx := context.Background()
	low := objtest.MakePod("team-a", "low").CPU("6").On("n").Obj()
	small := objtest.MakePod("team-a", "small").CPU("1").On("n").Obj()
	sim, err := New(ctx, Cluster{Nodes: []*corev1.Node{objtest.MakeNode("n").Zone("zone-1").Obj()}, Pods: []*corev1.Pod{low, small}})
	if err != nil {
		t.Fatal(err)
	}
	pod := objtest.MakePod("team-a", "high").CPU("4").Obj()
	tr, err := sim.Trial(ctx, pod, "n")
	if err != nil {
		t.Fatal(err)
	}
	fits := func() bool {
		ok, err := tr.Fits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if fits() {
		t.Fatal("fits with both pods there")
	}
	if err := tr.Remove(ctx, low); err != nil {
		t.Fatal(err)
	}
	if !fits() {
		t.Error("does not fit without the 6-CPU pod")
	}
	if err := tr.Add(ctx, low); err != nil {
		t.Fatal(err)
	}
	if fits() {
		t.Error("fits with the 6-CPU pod put back")
	}
	// The simulation itself is untouched.
	ds, _ := sim.Diagnose(ctx, pod, nil)
	if ds[0].Fits() || len(ds[0].Pods) != 2 {
		t.Errorf("the trial changed the simulation: %+v", ds[0])
	}
}
