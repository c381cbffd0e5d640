package record

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/rehearse/trace"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

// testBlueprint has team ml (namespaces ml and ml-dev), team web, and the
// retail template's three classes.
func testBlueprint() *v1alpha1.Blueprint {
	return &v1alpha1.Blueprint{Spec: v1alpha1.Spec{
		Teams: []v1alpha1.Team{{Name: "ml", Namespaces: []string{"ml", "ml-dev"}}, {Name: "web", Namespaces: []string{"web"}}},
		Classes: []v1alpha1.Class{
			{Name: "inference", Priority: v1alpha1.PriorityHigh},
			{Name: "training", Preemption: v1alpha1.PreemptNever},
			{Name: "batch"},
		},
	}}
}

// jobWrapper builds a Job: makeJob, its setters, then Obj.
type jobWrapper struct{ batchv1.Job }

// makeJob is a Job of one pod submitted at submit.
func makeJob(ns, name string, submit time.Duration) *jobWrapper {
	return &jobWrapper{batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("Job/" + name), CreationTimestamp: at(submit), Labels: map[string]string{}},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "secret-image:1", Args: []string{"--token=hunter2"}}}},
		}},
	}}
}

func (j *jobWrapper) Obj() batchv1.Job { return j.Job }

func (j *jobWrapper) Pods(parallelism, completions int32) *jobWrapper {
	j.Spec.Parallelism, j.Spec.Completions = &parallelism, &completions
	return j
}

func (j *jobWrapper) Label(k, v string) *jobWrapper { j.Labels[k] = v; return j }

// Done marks the Job Complete at end.
func (j *jobWrapper) Done(end time.Duration) *jobWrapper {
	j.Status.CompletionTime = ptr.To(at(end))
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: at(end)})
	return j
}

// ranPod is a pod of job that ran from start to end, as a kubelet
// reports it (its containers' times).
func ranPod(ns, job, name string, start, end time.Duration) *objtest.PodWrapper {
	p := objtest.MakePod(ns, name).Owner("Job", job).Phase(corev1.PodSucceeded)
	p.Status.StartTime = ptr.To(at(start - 5*time.Second)) // before the image pull
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: at(start), FinishedAt: at(end)}}}}
	return p
}

func pods(ps ...*objtest.PodWrapper) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range ps {
		out = append(out, *p.Obj())
	}
	return out
}

var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func q(s string) resource.Quantity { return resource.MustParse(s) }

// Each finished Job of a team becomes its row: its team from the
// namespace, class and kind from its labels, one pod's requests, its pods'
// run time, its submit time.
func TestJobsToRows(t *testing.T) {
	c := Cluster{
		Jobs: []batchv1.Job{
			makeJob("ml", "bert", 0).Pods(2, 2).Label(v1alpha1.LabelClass, "training").Done(time.Hour).Obj(),
			makeJob("ml-dev", "etl", 10*time.Minute).Label(v1alpha1.LabelAppComponent, "batch").Done(time.Hour).Obj(),
			// Its class's role says training; no GPUs.
			makeJob("web", "tune", 20*time.Minute).Label(v1alpha1.LabelClass, "training").Done(time.Hour).Obj(),
		},
		Pods: pods(
			ranPod("ml", "bert", "bert-a", time.Minute, 31*time.Minute).GPU("1").CPU("4").Memory("16Gi"),
			ranPod("ml", "bert", "bert-b", time.Minute, 31*time.Minute).GPU("1").CPU("4").Memory("16Gi"),
			ranPod("ml-dev", "etl", "etl-a", 11*time.Minute, 11*time.Minute+90*time.Second).CPU("500m").Memory("1Gi"),
			ranPod("web", "tune", "tune-a", 21*time.Minute, 22*time.Minute).CPU("1").Memory("1Gi"),
		),
	}
	rec := Convert(c, Options{Blueprint: testBlueprint()})
	want := []Row{
		{At: t0, UID: "Job/bert", Job: trace.Job{Team: "ml", Kind: trace.Training, Name: "bert", Pods: 2, GPUs: 1, CPU: q("4"), Memory: q("16Gi"), Duration: 30 * time.Minute, Class: "training"}},
		{At: t0.Add(10 * time.Minute), UID: "Job/etl", Job: trace.Job{Team: "ml", Kind: trace.Batch, Name: "etl", Pods: 1, CPU: q("500m"), Memory: q("1Gi"), Duration: 90 * time.Second}},
		{At: t0.Add(20 * time.Minute), UID: "Job/tune", Job: trace.Job{Team: "web", Kind: trace.Training, Name: "tune", Pods: 1, CPU: q("1"), Memory: q("1Gi"), Duration: time.Minute, Class: "training"}},
	}
	if diff := cmp.Diff(want, rec.Rows, quantities); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if len(rec.Summary.Problems) > 0 {
		t.Errorf("problems of a clean cluster: %v", rec.Summary.Problems)
	}
	if rec.Summary.Jobs != 3 || rec.Summary.Kinds[trace.Training] != 2 {
		t.Errorf("summary counts %d Jobs, %d training; want 3 and 2", rec.Summary.Jobs, rec.Summary.Kinds[trace.Training])
	}
}

// What cannot be recorded is counted or reported, each with its fix,
// never dropped silently.
func TestLeftOutAndReported(t *testing.T) {
	since := t0.Add(time.Hour)
	running := makeJob("ml", "running", 2*time.Hour)
	suspended := makeJob("ml", "queued", 2*time.Hour)
	suspended.Spec.Suspend = ptr.To(true)
	ttl := makeJob("ml", "ttl", 2*time.Hour).Done(3 * time.Hour)
	ttl.Spec.TTLSecondsAfterFinished = ptr.To[int32](600)
	c := Cluster{
		Jobs: []batchv1.Job{
			running.Obj(), suspended.Obj(), ttl.Obj(),
			makeJob("ml", "old", 0).Done(2 * time.Hour).Obj(),
			makeJob("scratch", "a", 2*time.Hour).Done(3 * time.Hour).Obj(),
			makeJob("scratch", "b", 2*time.Hour).Done(3 * time.Hour).Obj(),
			makeJob("ml", "waves", 2*time.Hour).Pods(2, 6).Done(3 * time.Hour).Obj(),
			makeJob("ml", "mig", 2*time.Hour).Done(3 * time.Hour).Obj(),
			makeJob("ml", "never", 2*time.Hour).Done(3 * time.Hour).Obj(),
		},
		Pods: pods(
			ranPod("ml", "ttl", "ttl-a", 2*time.Hour, 2*time.Hour+time.Minute), // no requests
			ranPod("ml", "waves", "w1", 2*time.Hour, 2*time.Hour+10*time.Minute).CPU("1"),
			ranPod("ml", "waves", "w2", 2*time.Hour, 2*time.Hour+10*time.Minute).CPU("1"),
			ranPod("ml", "waves", "w3", 2*time.Hour+10*time.Minute, 2*time.Hour+20*time.Minute).CPU("1"),
			ranPod("ml", "waves", "w4", 2*time.Hour+10*time.Minute, 2*time.Hour+20*time.Minute).CPU("1"),
			ranPod("ml", "waves", "w5", 2*time.Hour+20*time.Minute, 2*time.Hour+30*time.Minute).CPU("1"),
			ranPod("ml", "waves", "w6", 2*time.Hour+20*time.Minute, 2*time.Hour+30*time.Minute).CPU("1"),
			ranPod("ml", "mig", "mig-a", 2*time.Hour, 3*time.Hour).CPU("1").Request("nvidia.com/mig-1g.10gb", "1"),
			ranPod("scratch", "a", "a-a", 2*time.Hour, 3*time.Hour).CPU("1"),
		),
		Events: []corev1.Event{
			{InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "ml", Name: "deleted"}, LastTimestamp: at(2 * time.Hour)},
			{InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "ml", Name: "ttl"}, LastTimestamp: at(2 * time.Hour)},
			{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ml", Name: "p"}, LastTimestamp: at(2 * time.Hour)},
		},
	}
	rec := Convert(c, Options{Blueprint: testBlueprint(), Since: since})
	s := rec.Summary
	if s.Running != 1 || s.Waiting != 1 || s.Before != 1 || s.NeverRan != 1 || s.WithTTL != 1 || s.ShortestTTL != 10*time.Minute || s.Fractional != 1 {
		t.Errorf("summary: running %d, waiting %d, before %d, never ran %d, with a TTL %d (shortest %v), fractional %d; want 1 of each, TTL 10m",
			s.Running, s.Waiting, s.Before, s.NeverRan, s.WithTTL, s.ShortestTTL, s.Fractional)
	}
	if want := []string{"ml/deleted"}; !cmp.Equal(s.Gone, want) {
		t.Errorf("gone Jobs %v, want %v", s.Gone, want)
	}
	var got []string
	for _, p := range s.Problems {
		if p.Fix == "" || !p.Warning {
			t.Errorf("problem without a fix, or not a warning: %v", p)
		}
		got = append(got, p.Object.String())
	}
	if want := []string{"Namespace/scratch", "Job ml/ttl", "Job ml/waves", "Job ml/mig"}; !cmp.Equal(got, want, cmpopts.SortSlices(func(a, b string) bool { return a < b })) {
		t.Errorf("problems are about %v, want %v:\n%v", got, want, s.Problems)
	}
	if !strings.Contains(s.Problems[0].Message, "2 workloads in it are left out") {
		t.Errorf("the namespace of no team: %v; want its count", s.Problems[0])
	}
	byName := map[string]Row{}
	for _, r := range rec.Rows {
		byName[r.Name] = r
	}
	if w := byName["waves"]; w.Pods != 2 || w.Duration != 30*time.Minute {
		t.Errorf("a Job of 6 completions, 2 at once: %d pods of %v; want 2 pods sharing 60m of pod time, 30m each", w.Pods, w.Duration)
	}
	if m := byName["mig"]; m.GPUs != 1 || m.Kind != trace.Training {
		t.Errorf("a Job asking for a MIG slice: %d GPUs, kind %s; want 1, training", m.GPUs, m.Kind)
	}
	var out bytes.Buffer
	s.Render(&out, 2)
	for _, want := range []string{"Recorded 3 Jobs", "1 Job still running", "1 Job waiting", "1 Job is gone", "ml/deleted", "ttlSecondsAfterFinished (the shortest 10m)", "--watch", "... and 2 more problems."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary does not say %q:\n%s", want, out.String())
		}
	}
}

// A GPU Deployment is an inference row of its replicas; one without GPUs
// is not recorded; one made before the window starts with it.
func TestServices(t *testing.T) {
	gpu := objtest.MakeDeployment("ml", "reco", 3).Obj()
	gpu.UID = "reco"
	gpu.CreationTimestamp = at(0)
	gpu.Labels = map[string]string{v1alpha1.LabelClass: "inference"}
	gpu.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{v1alpha1.ResourceNVIDIAGPU: q("1"), corev1.ResourceCPU: q("2")}
	web := objtest.MakeDeployment("web", "site", 5).Obj()
	since := t0.Add(time.Hour)
	rec := Convert(Cluster{Deployments: []appsv1.Deployment{*gpu, *web}}, Options{Blueprint: testBlueprint(), Since: since})
	want := []Row{{At: since, UID: "reco", Job: trace.Job{Team: "ml", Kind: trace.Inference, Name: "reco", Pods: 3, GPUs: 1, CPU: q("2"), Class: "inference"}}}
	if diff := cmp.Diff(want, rec.Rows, quantities); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if rec.Summary.CPUServices != 1 || rec.Summary.ServicesBefore != 1 {
		t.Errorf("services without GPUs %d, before the window %d; want 1 and 1", rec.Summary.CPUServices, rec.Summary.ServicesBefore)
	}
}

// Kueue's Workload says when a Job was admitted: the wait is summed, the
// submit stays the Job's creation.
func TestKueueAdmission(t *testing.T) {
	w := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": KueueGroup + "/v1beta2", "kind": "Workload",
		"metadata": map[string]any{"namespace": "ml", "name": "job-bert-1", "ownerReferences": []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": "bert", "uid": "Job/bert"}}},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "QuotaReserved", "status": "True", "lastTransitionTime": "2026-03-02T09:04:00Z", "reason": "x", "message": "x"},
			map[string]any{"type": "Admitted", "status": "True", "lastTransitionTime": "2026-03-02T09:05:00Z", "reason": "x", "message": "x"},
		}},
	}}
	c := Cluster{
		Jobs:      []batchv1.Job{makeJob("ml", "bert", 0).Done(time.Hour).Obj()},
		Pods:      pods(ranPod("ml", "bert", "bert-a", 5*time.Minute, 35*time.Minute).CPU("1")),
		Workloads: []unstructured.Unstructured{w},
	}
	rec := Convert(c, Options{Blueprint: testBlueprint()})
	if len(rec.Rows) != 1 || !rec.Rows[0].At.Equal(t0) || rec.Rows[0].Duration != 30*time.Minute {
		t.Fatalf("rows %+v; want one submitted at the Job's creation, running 30m", rec.Rows)
	}
	if s := rec.Summary; s.Queued != 1 || s.QueueWait != 5*time.Minute {
		t.Errorf("queued %d, waited %v; want 1 Job admitted after 5m", s.Queued, s.QueueWait)
	}
}

// --anonymize writes stable hashes that are DNS labels; --team-from takes
// the team from a label; names that repeat in a team are told apart.
func TestNamesAndTeams(t *testing.T) {
	job := func(ns, name string) batchv1.Job {
		j := makeJob(ns, name, 0).Done(time.Hour).Obj()
		j.UID = types.UID(ns + "/" + name)
		return j
	}
	c := Cluster{
		Jobs:       []batchv1.Job{job("ml", "train.v2"), job("ml-dev", "train.v2"), job("lab", "x")},
		Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "lab", Labels: map[string]string{"org/team": "research"}}}},
	}
	for _, j := range c.Jobs {
		c.Pods = append(c.Pods, *ranPod(j.Namespace, j.Name, j.Name+"-a", 0, time.Minute).CPU("1").Obj())
		c.Pods[len(c.Pods)-1].OwnerReferences[0].UID = j.UID
	}
	rec := Convert(c, Options{Blueprint: testBlueprint()})
	var names []string
	for _, r := range rec.Rows {
		names = append(names, r.Team+"/"+r.Name)
	}
	if want := []string{"ml/train-v2", "ml/train-v2-" + hash("ml-dev/train.v2", 5)}; !cmp.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}

	rec = Convert(c, Options{Blueprint: testBlueprint(), TeamLabel: "org/team", Anonymize: true})
	if len(rec.Rows) != 1 || rec.Rows[0].Team != "research" || rec.Rows[0].Name != Anonymous("job", "lab", "x") {
		t.Errorf("rows by label, anonymized: %+v; want lab/x as team research, named %s", rec.Rows, Anonymous("job", "lab", "x"))
	}
	if n := Anonymous("job", "lab", "x"); !strings.HasPrefix(n, "job-") || len(n) != 14 || n != Anonymous("job", "lab", "x") {
		t.Errorf("Anonymous = %q; want job- and 10 hex digits, the same each time", n)
	}
	if got := len(rec.Summary.Problems); got != 2 {
		t.Errorf("with --team-from, the two ml namespaces without the label: %d problems, want 2:\n%v", got, rec.Summary.Problems)
	}
}

// Rows written by the trace's Appender read back as a trace with the
// same jobs: a recording is berth's format.
func TestRowsAreATrace(t *testing.T) {
	c := Cluster{
		Jobs: []batchv1.Job{makeJob("ml", "bert", 0).Label(v1alpha1.LabelClass, "training").Done(time.Hour).Obj()},
		Pods: pods(ranPod("ml", "bert", "bert-a", time.Minute, 31*time.Minute).GPU("1").CPU("4").Memory("16Gi")),
	}
	rec := Convert(c, Options{Blueprint: testBlueprint()})
	var buf bytes.Buffer
	a, err := trace.NewAppender(&buf, true, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rec.Rows {
		if err := a.Append(r.Job, r.At); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := trace.Parse("rec.csv", buf.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(tr.Jobs) != 1 || tr.Jobs[0].Duration != 30*time.Minute || tr.Jobs[0].GPUs != 1 {
		t.Errorf("read back %+v", tr.Jobs)
	}
	for _, secret := range []string{"secret-image", "hunter2"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("the recording holds %q:\n%s", secret, buf.String())
		}
	}
}

// disruptedPod is a pod of job that started at start and that a
// disruption (a spot notice, an eviction) marked at marked; the kubelet
// stopped it after its 30 s grace. Its containers report a later finish,
// as a simulated pod whose node went may: the condition decides.
func disruptedPod(ns, job, name string, start, marked time.Duration) *objtest.PodWrapper {
	p := ranPod(ns, job, name, start, marked+10*time.Minute).Phase(corev1.PodFailed)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: at(marked), Reason: "TerminationByKubelet"})
	return p
}

// A pod a disruption ended counts to its condition and grace period; with
// Options.Disruptions (the recording holds the disruptions, which a
// replay repeats) only the work its checkpoint saved, so that the row's
// duration is the work the Job needed and the replay loses the rest
// again. A Job without checkpoints keeps none of a disrupted pod's work.
func TestDisruptedPodsCountTheWorkTheyKept(t *testing.T) {
	train := makeJob("ml", "train", 0).Label(v1alpha1.LabelClass, "training").Done(50 * time.Minute)
	train.Annotations = map[string]string{v1alpha1.AnnotationCheckpoint: "10m"}
	c := Cluster{
		Jobs: []batchv1.Job{
			train.Obj(),
			makeJob("ml", "etl", 0).Pods(2, 2).Label(v1alpha1.LabelAppComponent, "batch").Done(45 * time.Minute).Obj(),
		},
		Pods: pods(
			// Ran 25m30s (to 26m and its grace), of which the checkpoint
			// at 20m kept 20m; its replacement ran the 15 minutes left.
			disruptedPod("ml", "train", "train-a", time.Minute, 26*time.Minute).GPU("1").CPU("4").Memory("16Gi"),
			ranPod("ml", "train", "train-b", 30*time.Minute, 45*time.Minute).GPU("1").CPU("4").Memory("16Gi"),
			// One of two pods evicted after 9 minutes (and 30 s), its
			// replacement the whole 30 minutes.
			ranPod("ml", "etl", "etl-a", time.Minute, 31*time.Minute).CPU("1").Memory("1Gi"),
			disruptedPod("ml", "etl", "etl-b", time.Minute, 10*time.Minute).CPU("1").Memory("1Gi"),
			ranPod("ml", "etl", "etl-c", 12*time.Minute, 42*time.Minute).CPU("1").Memory("1Gi"),
		),
	}
	durations := func(o Options) map[string]time.Duration {
		o.Blueprint = testBlueprint()
		got := map[string]time.Duration{}
		for _, r := range Convert(c, o).Rows {
			got[r.Name] = r.Duration
			if r.Name == "train" && r.Checkpoint != 10*time.Minute {
				t.Errorf("train's checkpoint %s; want its annotation's 10m", r.Checkpoint)
			}
		}
		return got
	}
	if diff := cmp.Diff(map[string]time.Duration{
		"train": 25*time.Minute + 30*time.Second + 15*time.Minute,
		"etl":   (30*time.Minute + 9*time.Minute + 30*time.Second + 30*time.Minute) / 2,
	}, durations(Options{})); diff != "" {
		t.Errorf("durations, every pod's run to its disruption (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]time.Duration{
		"train": 20*time.Minute + 15*time.Minute,
		"etl":   30 * time.Minute,
	}, durations(Options{Disruptions: true})); diff != "" {
		t.Errorf("durations with the disruptions recorded, the work kept (-want +got):\n%s", diff)
	}
}
