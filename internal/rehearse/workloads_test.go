package rehearse

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

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

// Checkpointed training of one pod keeps the checkpoint claim `berth new
// training` writes, of the blueprint's default class, created before its
// Job and mounted by its pods; training without a checkpoint, a Job of
// several pods (one ReadWriteOnce claim cannot serve them on several
// nodes) and batch have none.
func TestCheckpointedTrainingKeepsItsClaim(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workloadFor(bp, trace.Job{Kind: scaffold.Training, Team: "team-a", Name: "ft", Pods: 1, GPUs: 1, Duration: time.Hour, Checkpoint: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.objects) != 2 || !w.claimed {
		t.Fatalf("objects %d (claimed %v); want the claim and the Job", len(w.objects), w.claimed)
	}
	claim, ok := w.objects[0].(*corev1.PersistentVolumeClaim)
	if !ok {
		t.Fatalf("first object %T; want the claim, created before the Job", w.objects[0])
	}
	if claim.Name != "ft-checkpoints" || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != bp.Spec.DefaultStorageClassName() ||
		claim.Labels[v1alpha1.LabelRehearsal] != string(scaffold.Training) {
		t.Errorf("claim %s of class %v, labels %v; want ft-checkpoints of the default class %s, marked the rehearsal's",
			claim.Name, claim.Spec.StorageClassName, claim.Labels, bp.Spec.DefaultStorageClassName())
	}
	job := w.objects[1].(*batchv1.Job)
	if v := job.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "ft-checkpoints" {
		t.Errorf("the Job's pods mount %+v; want the claim ft-checkpoints", v)
	}
	for _, row := range []trace.Job{
		{Kind: scaffold.Training, Team: "team-a", Name: "plain", Pods: 1, GPUs: 1, Duration: time.Hour},
		{Kind: scaffold.Training, Team: "team-a", Name: "gang", Pods: 2, GPUs: 1, Duration: time.Hour, Checkpoint: 15 * time.Minute},
		{Kind: scaffold.Batch, Team: "team-a", Name: "etl", Pods: 1, Duration: time.Hour, Checkpoint: time.Minute},
	} {
		w, err := workloadFor(bp, row)
		if err != nil {
			t.Fatal(err)
		}
		job := w.objects[0].(*batchv1.Job)
		if len(w.objects) != 1 || w.claimed || len(job.Spec.Template.Spec.Volumes) != 0 {
			t.Errorf("%s row %s: %d objects, volumes %v; want the Job alone, mounting nothing", row.Kind, row.Name, len(w.objects), job.Spec.Template.Spec.Volumes)
		}
	}
}
