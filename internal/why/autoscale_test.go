package why

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/objtest"
)

// autoscalerStatus is the status ConfigMap the autoscaler publishes,
// read back with castatus, for pools as NAME: {target, max, upcoming}.
func autoscalerStatus(t *testing.T, pools map[string][3]int) (*castatus.Status, *castatus.Activity) {
	t.Helper()
	st := &castatus.Status{AutoscalerStatus: castatus.Running}
	a := &castatus.Activity{}
	for name, p := range pools {
		target, mx := p[0], p[1]
		st.NodeGroups = append(st.NodeGroups, castatus.NodeGroupStatus{Name: name, Health: castatus.HealthCondition{
			CloudProviderTarget: &target, MaxSize: &mx, NodeCounts: castatus.NodeCounts{Registered: castatus.RegisteredCounts{Total: target - p[2]}}}})
		a.Pools = append(a.Pools, castatus.PoolActivity{Name: name, Target: target, Max: mx, Upcoming: p[2]})
	}
	data, err := castatus.Data(st, a)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: castatus.ConfigMapNamespace, Name: castatus.ConfigMapName}, Data: data}
	st, a, err = castatus.Read(cm)
	if err != nil {
		t.Fatal(err)
	}
	return st, a
}

func podEvent(name, reason, msg string, ago time.Duration) corev1.Event {
	e := event("Pod", "ns", name, reason, msg)
	e.Type = corev1.EventTypeNormal
	e.LastTimestamp = metav1.NewTime(now.Add(-ago))
	return e
}

func TestAutoscalerAddsANode(t *testing.T) {
	s := snapshotOf(cluster())
	s.Blueprint = testBlueprint(t, "  - {name: burst, machine: {cpu: 8, memory: 32Gi}, autoscale: {min: 0, max: 3}}")
	s.Local = true
	s.Autoscaler, s.AutoscalerActivity = autoscalerStatus(t, map[string][3]int{"burst": {1, 3, 1}, "gpu": {2, 2, 0}})
	s.Events = []corev1.Event{podEvent("p", castatus.ReasonTriggeredScaleUp, castatus.TriggeredMessage([]castatus.ScaleUp{{Pool: "burst", From: 0, To: 1, Max: 3}}), 4*time.Second)}
	pod := objtest.MakePod("ns", "p").NodeSelector("berth.io/pool", "burst").Obj()
	pod.UID = "Pod/p"
	v := Explain(s, pod)
	wantTop(t, v, CausePoolCanGrow, []string{"pool burst is adding a node for this pod (requested 4s ago; 1 node upcoming)"},
		[]string{"wait for pool burst's new node to be Ready"})

	// Without an event for the pod yet, the autoscaler's next scan.
	s.Events = nil
	wantTop(t, Explain(s, pod), CausePoolCanGrow, []string{"the autoscaler that manages it adds one on its next scan"}, []string{"cluster-autoscaler-status"})

	// A pool the running autoscaler does not know: not in the applied
	// blueprint.
	s.Autoscaler, s.AutoscalerActivity = autoscalerStatus(t, map[string][3]int{"gpu": {2, 2, 0}})
	wantTop(t, Explain(s, pod), CausePoolCanGrow, []string{"the cluster's autoscaler does not manage the pool"}, []string{"`berth apply` the blueprint that has pool burst"})
}

func TestAutoscalerPoolAtMax(t *testing.T) {
	// The status's target is the maximum (two nodes on their way for
	// other pods): the pool cannot grow for this one.
	s := fullGPUs()
	s.Blueprint = testBlueprint(t, "")
	s.Blueprint.Spec.Pools[2].Autoscale.Max = 4
	s.Local = true
	s.Autoscaler, s.AutoscalerActivity = autoscalerStatus(t, map[string][3]int{"gpu": {4, 4, 2}})
	v := Explain(s, objtest.MakePod("team-a", "t").GPU("1").Toleration(tolerateGPU).Obj())
	wantTop(t, v, CauseResources, []string{"pool gpu is at its maximum of 4 nodes (autoscale 0-4)"}, []string{"raise pool gpu's autoscale.max"})

	// Without a blueprint, NotTriggerScaleUp says it, with the max from
	// the status, and the other pools' reasons are quoted.
	s = fullGPUs()
	s.Autoscaler, s.AutoscalerActivity = autoscalerStatus(t, map[string][3]int{"gpu": {2, 2, 0}})
	s.Events = []corev1.Event{podEvent("t", castatus.ReasonNotTriggerScaleUp, castatus.NotTriggeredMessage([]castatus.NotTriggered{
		{Pool: "gpu", Reason: castatus.MaxSizeReached}, {Pool: "cpu", Reason: "0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}"}}), 10*time.Second)}
	pod := objtest.MakePod("ns", "t").GPU("1").Toleration(tolerateGPU).Obj()
	pod.UID = "Pod/t"
	v = Explain(s, pod)
	if c := cause(v, CausePoolAtMax); c == nil || c.Message != "pool gpu is at its maximum of 2: the autoscaler will not grow it (NotTriggerScaleUp, 10s ago)" {
		t.Errorf("pool-at-max cause = %+v", c)
	}
	if c := cause(v, CauseAutoscaler); c == nil || c.Message != "the autoscaler will not grow pool cpu for this pod: 0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}" {
		t.Errorf("autoscaler cause = %+v", c)
	}
}

// Karpenter's events on the pod: the NodeClaim it launched for it, then
// why no NodePool can take it, each with its fix.
func TestKarpenterEvents(t *testing.T) {
	s := snapshotOf(cluster())
	s.Local = true
	pod := objtest.MakePod("ns", "p").GPU("1").Obj()
	pod.UID = "Pod/p"
	nominated := podEvent("p", "Nominated", "Pod should schedule on: nodeclaim/spot-gpu-x7k2q", 3*time.Second)
	nominated.Source.Component = "karpenter"
	s.Events = []corev1.Event{nominated}
	if !hasCause(Explain(s, pod), CauseScalingUp, "Karpenter is launching a NodeClaim for this pod: it should schedule on nodeclaim/spot-gpu-x7k2q (3s ago)") {
		t.Errorf("no cause says Karpenter launches the NodeClaim: %+v", Explain(s, pod).Causes)
	}
	failed := podEvent("p", "FailedScheduling", `Failed to schedule pod, incompatible with nodepool "gpu", all available instance types exceed limits for nodepool`, time.Second)
	failed.Source.Component = "karpenter"
	s.Events = append(s.Events, failed)
	if !hasCause(Explain(s, pod), CauseAutoscaler, `no Karpenter NodePool can take this pod (1s ago): incompatible with nodepool "gpu", all available instance types exceed limits for nodepool`) {
		t.Errorf("no cause says why no NodePool takes the pod: %+v", Explain(s, pod).Causes)
	}
	// The scheduler's FailedScheduling is not Karpenter's.
	failed.Source.Component = "default-scheduler"
	s.Events = []corev1.Event{failed}
	if hasCause(Explain(s, pod), CauseAutoscaler, "no Karpenter NodePool") {
		t.Error("the scheduler's event was taken for Karpenter's")
	}
}

func hasCause(v Verdict, code, message string) bool {
	for _, c := range v.Causes {
		if c.Code == code && strings.Contains(c.Message, message) {
			return true
		}
	}
	return false
}
