package autoscaler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGridAfterIsTheGridsNextPoint(t *testing.T) {
	last := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		after time.Duration // t, as an offset from last
		want  time.Duration
	}{
		{0, 10 * time.Second},                                   // the moment of the last scan: the next point
		{3 * time.Second, 10 * time.Second},                     // between points: the next
		{10*time.Second - 1, 10 * time.Second},                  // a change at 10 s asks at 10 s minus a nanosecond: 10 s
		{10 * time.Second, 20 * time.Second},                    // strictly after
		{time.Hour + 5*time.Second, time.Hour + 10*time.Second}, // many points on
		{-time.Second, 10 * time.Second},                        // never before the last scan's next
	} {
		if got := gridAfter(last, 10*time.Second, last.Add(c.after)).Sub(last); got != c.want {
			t.Errorf("gridAfter(+%v) = +%v; want +%v", c.after, got, c.want)
		}
	}
}

// A node's status report that changes only its heartbeat times changes
// nothing a scan reads; a change of its allocatable or a condition's
// status does.
func TestHeartbeatOnly(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Unix(1, 0)}},
		},
	}
	beat := node.DeepCopy()
	beat.Status.Conditions[0].LastHeartbeatTime = metav1.Unix(600, 0)
	if !heartbeatOnly(node, beat) {
		t.Error("a heartbeat alone counts as a change")
	}
	gpus := beat.DeepCopy()
	gpus.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
	notReady := beat.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	tainted := beat.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	for name, n := range map[string]*corev1.Node{"allocatable": gpus, "Ready": notReady, "taints": tainted} {
		if heartbeatOnly(node, n) {
			t.Errorf("a change of its %s counts as a heartbeat", name)
		}
	}
}
