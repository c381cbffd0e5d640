package rehearse

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
)

// An inference HPA's scale-down window runs compressed: the retail
// inference class's 10 minutes at speed 60 are 10 s, not the 300 s floor
// berth new keeps in wall seconds; a replica with GPUs keeps the 600 s
// floor, divided too.
func TestInferenceWindowIsCompressed(t *testing.T) {
	design, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	bp, _, err := Compress(design, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gpus int64
		want int32
	}{{0, 10}, {1, 10}} {
		w, err := workloadFor(bp, trace.Job{Kind: scaffold.Inference, Team: "team-a", Name: "reco", Pods: 2, GPUs: tc.gpus}, 60)
		if err != nil {
			t.Fatal(err)
		}
		got := int32(-1)
		for _, obj := range w.objects {
			if h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
				got = *h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds
			}
		}
		if got != tc.want {
			t.Errorf("%d GPUs: the HPA's window is %d s; want %d s (10m at speed 60)", tc.gpus, got, tc.want)
		}
	}
	// Below the class's window, the floor divided: 600 s at speed 120 is 5 s.
	bp, _, err = Compress(design, 120)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workloadFor(bp, trace.Job{Kind: scaffold.Inference, Team: "team-a", Name: "reco", Pods: 2, GPUs: 1}, 120)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range w.objects {
		if h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
			if got := time.Duration(*h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds) * time.Second; got != 5*time.Second {
				t.Errorf("at speed 120 the window is %s; want 5s", got)
			}
		}
	}
}
