package rehearse

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
)

// A rehearsal's inference HPA is the one berth new writes, unchanged:
// its scale-down window is the retail inference class's 10 minutes,
// which the HPA controller counts on the rehearsal's clock. And a Job
// pod runs the row's duration as it stands.
func TestWorkloadsAreWhatBerthNewWrites(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	for _, gpus := range []int64{0, 1} {
		w, err := workloadFor(bp, trace.Job{Kind: scaffold.Inference, Team: "team-a", Name: "reco", Pods: 2, GPUs: gpus})
		if err != nil {
			t.Fatal(err)
		}
		got := int32(-1)
		for _, obj := range w.objects {
			if h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
				got = *h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds
			}
		}
		if got != 600 {
			t.Errorf("%d GPUs: the HPA's scale-down window is %d s; want 600 s, the class's 10 minutes", gpus, got)
		}
	}
	w, err := workloadFor(bp, trace.Job{Kind: scaffold.Training, Team: "team-a", Name: "ft", Pods: 1, GPUs: 1, Duration: 90 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	job, ok := w.objects[0].(*batchv1.Job)
	if !ok {
		t.Fatalf("a training row is %T; want a Job", w.objects[0])
	}
	if d := job.Spec.Template.Annotations[v1alpha1.AnnotationDuration]; d != "5400000ms" {
		t.Errorf("the Job's pods run %q; want 5400000ms, the row's 90 minutes", d)
	}
}
