package why

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

// now is the fixtures' clock.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const gpu = corev1.ResourceName("nvidia.com/gpu")

// nodeBuilder builds nodes fluently: 16 CPUs, 64Gi, 110 pods by default.
type nodeBuilder struct{ n corev1.Node }

func makeNode(name, pool string) *nodeBuilder {
	return &nodeBuilder{n: corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"berth.io/pool": pool, "agentpool": pool, corev1.LabelTopologyZone: "zone-1", corev1.LabelHostname: name,
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("16"),
			corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}},
	}}
}

func (b *nodeBuilder) alloc(name corev1.ResourceName, q string) *nodeBuilder {
	b.n.Status.Allocatable[name] = resource.MustParse(q)
	return b
}

func (b *nodeBuilder) taint(key, value string, effect corev1.TaintEffect) *nodeBuilder {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

func (b *nodeBuilder) label(k, v string) *nodeBuilder { b.n.Labels[k] = v; return b }

func (b *nodeBuilder) zone(z string) *nodeBuilder { return b.label(corev1.LabelTopologyZone, z) }

func (b *nodeBuilder) cordon() *nodeBuilder { b.n.Spec.Unschedulable = true; return b }

func (b *nodeBuilder) obj() corev1.Node { return b.n }

// gpuNode is a node of the GPU pool: 24 CPUs, one GPU, tainted.
func gpuNode(name string) *nodeBuilder {
	return makeNode(name, "gpu").alloc(corev1.ResourceCPU, "24").alloc(gpu, "1").taint("gpu", "true", corev1.TaintEffectNoSchedule)
}

// podBuilder builds pods fluently: Pending, one container "app".
type podBuilder struct{ p corev1.Pod }

func makePod(ns, name string) *podBuilder {
	return &podBuilder{p: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: map[string]string{}, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

func (b *podBuilder) request(name corev1.ResourceName, q string) *podBuilder {
	r := &b.p.Spec.Containers[0].Resources
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	r.Requests[name] = resource.MustParse(q)
	if name == gpu {
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = resource.MustParse(q)
	}
	return b
}

func (b *podBuilder) tolerate(key, value string) *podBuilder {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: corev1.TaintEffectNoSchedule})
	return b
}

func (b *podBuilder) nodeSelector(k, v string) *podBuilder {
	if b.p.Spec.NodeSelector == nil {
		b.p.Spec.NodeSelector = map[string]string{}
	}
	b.p.Spec.NodeSelector[k] = v
	return b
}

func (b *podBuilder) label(k, v string) *podBuilder { b.p.Labels[k] = v; return b }

func (b *podBuilder) priority(class string, value int32, policy corev1.PreemptionPolicy) *podBuilder {
	b.p.Spec.PriorityClassName = class
	b.p.Spec.Priority = &value
	b.p.Spec.PreemptionPolicy = &policy
	return b
}

// on binds the pod to a node, Running.
func (b *podBuilder) on(node string) *podBuilder {
	b.p.Spec.NodeName = node
	b.p.Status.Phase = corev1.PodRunning
	return b
}

func (b *podBuilder) unschedulable(msg string) *podBuilder {
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg})
	return b
}

func (b *podBuilder) owner(kind, name string) *podBuilder {
	yes := true
	b.p.OwnerReferences = append(b.p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: name, UID: types.UID(kind + "/" + name), Controller: &yes})
	return b
}

func (b *podBuilder) annotate(k, v string) *podBuilder {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	b.p.Annotations[k] = v
	return b
}

func (b *podBuilder) obj() corev1.Pod { return b.p }

func (b *podBuilder) ptr() *corev1.Pod { p := b.p; return &p }

// snapshotOf is a snapshot of nodes and pods at now.
func snapshotOf(nodes []corev1.Node, pods ...corev1.Pod) *Snapshot {
	return &Snapshot{Now: now, Nodes: nodes, Pods: pods}
}

func nodes(bs ...*nodeBuilder) []corev1.Node {
	out := make([]corev1.Node, len(bs))
	for i, b := range bs {
		out[i] = b.obj()
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
