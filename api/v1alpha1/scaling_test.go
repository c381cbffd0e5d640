package v1alpha1

import (
	"testing"
	"time"
)

func TestScalingDefaults(t *testing.T) {
	bp := &Blueprint{Spec: Spec{
		Pools: []Pool{{Name: "cpu"}, {Name: "gpu", Machine: Machine{GPU: &GPU{Count: 1}}}},
		Classes: []Class{
			{Name: "inference", Pools: []string{"gpu"}, Scaling: &Scaling{Metric: MetricRPS, Target: 20, MaxReplicas: 4}},
			{Name: "web", Pools: []string{"cpu"}, Scaling: &Scaling{Metric: MetricCPU, Target: 70, MaxReplicas: 4}},
			{Name: "batch", Pools: []string{"cpu", "gpu"}, Scaling: &Scaling{MaxReplicas: 4, Queue: &Queue{Type: QueueKafka}}},
		},
	}}
	SetDefaults(bp)
	for i, want := range []struct {
		window time.Duration
		min    int32
	}{{10 * time.Minute, 1}, {5 * time.Minute, 1}, {10 * time.Minute, 0}} {
		s := bp.Spec.Classes[i].Scaling
		if s.ScaleDownWindow.Duration != want.window || *s.MinReplicas != want.min {
			t.Errorf("class %s: window %v, minReplicas %d; want %v, %d", bp.Spec.Classes[i].Name, s.ScaleDownWindow.Duration, *s.MinReplicas, want.window, want.min)
		}
	}
	if q := bp.Spec.Classes[2].Scaling.Queue; q.Target != DefaultQueueTarget {
		t.Errorf("queue target %d, want %d", q.Target, DefaultQueueTarget)
	}
}
