package why

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
)

// now is the fixtures' clock.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const gpu = corev1.ResourceName("nvidia.com/gpu")

// poolNode is a node of a pool as berth labels one (berth.io/pool and
// AKS's agentpool), in zone-1: 16 CPUs, 64Gi, 110 pods.
func poolNode(name, pool string) *objtest.NodeWrapper {
	return objtest.MakeNode(name).Pool(pool).Label("agentpool", pool).Zone("zone-1").CPU("16").Memory("64Gi")
}

// gpuNode is a node of the GPU pool: 24 CPUs, one GPU, tainted.
func gpuNode(name string) *objtest.NodeWrapper {
	return poolNode(name, "gpu").CPU("24").GPUs("1").Taint("gpu=true:NoSchedule")
}

// tolerateGPU is the toleration berth's GPU classes give their pods.
var tolerateGPU = corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}

// snapshotOf is a snapshot of nodes and pods at now.
func snapshotOf(nodes []corev1.Node, pods ...corev1.Pod) *Snapshot {
	return &Snapshot{Now: now, Nodes: nodes, Pods: pods}
}

func nodes(bs ...*objtest.NodeWrapper) []corev1.Node {
	out := make([]corev1.Node, len(bs))
	for i, b := range bs {
		out[i] = *b.Obj()
	}
	return out
}

func priorityClass(name string, value int32, policy corev1.PreemptionPolicy) schedulingv1.PriorityClass {
	return schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, PreemptionPolicy: &policy}
}

func pdb(ns, name string, match map[string]string, allowed int32) policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: match}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func event(kind, ns, name, reason, msg string) corev1.Event {
	return corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name + ".1"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name, UID: types.UID(kind + "/" + name)},
		Reason:         reason, Message: msg, Type: corev1.EventTypeWarning, Count: 3,
		LastTimestamp: metav1.NewTime(now.Add(-30 * time.Second)),
	}
}

// testBlueprint is a small blueprint with GPU pools, teams and classes.
func testBlueprint(t *testing.T, extraPools string) *v1alpha1.Blueprint {
	t.Helper()
	bp, _, err := blueprint.Parse("test.yaml", []byte(`apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: test}
spec:
  zones: [zone-1, zone-2, zone-3]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: cpu, machine: {cpu: 16, memory: 64Gi}, count: 2}
  - {name: gpu, machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}, autoscale: {min: 0, max: 2}, taints: ["gpu=true:NoSchedule"]}
`+extraPools+`
  teams:
  - {name: team-a, quota: {gpu: 4}}
  - {name: web}
  classes:
  - {name: inference, priority: high, pools: [cpu, gpu]}
  - {name: training, priority: low, preemption: Never, pools: [gpu]}
`))
	if err != nil {
		t.Fatal(err)
	}
	return bp
}
