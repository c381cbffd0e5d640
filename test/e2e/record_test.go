package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/record"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
	"berth.io/berth/test/harness"
)

// recordJob is a Job of team-a as `berth new` writes it (as a rehearsal
// submits a trace row), of pods pods that each run d.
func recordJob(t *testing.T, kind scaffold.Kind, name string, pods int32, gpus int, d time.Duration) *batchv1.Job {
	t.Helper()
	j, _, _, err := scaffold.Job(bp, scaffold.Options{Kind: kind, Name: name, Team: "team-a", GPUs: gpus, GPUsGiven: true})
	if err != nil {
		t.Fatal(err)
	}
	j.Spec.Parallelism, j.Spec.Completions = ptr.To(pods), ptr.To(pods)
	j.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationDuration: d.String()}
	return j
}

// runJobs creates the Jobs and waits until each has finished.
func runJobs(t *testing.T, jobs ...*batchv1.Job) {
	t.Helper()
	ctx := context.Background()
	for _, j := range jobs {
		if _, err := client.BatchV1().Jobs(j.Namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating job %s/%s: %v", j.Namespace, j.Name, err)
		}
		t.Cleanup(func() {
			client.BatchV1().Jobs(j.Namespace).Delete(context.Background(), j.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		})
	}
	for _, j := range jobs {
		eventually(t, 2*time.Minute, "job "+j.Name+" Complete", func() (bool, error) {
			got, err := client.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			_, done := record.Finished(got)
			return done, nil
		})
	}
}

// rowsOf reads a recorded trace, by row name.
func rowsOf(t *testing.T, path string) (*trace.Trace, map[string]trace.Job) {
	t.Helper()
	tr, err := trace.Read(path)
	if err != nil {
		data, _ := readFile(path)
		t.Fatalf("the recording does not read as a trace: %v\n%s", err, data)
	}
	byName := map[string]trace.Job{}
	for _, j := range tr.Jobs {
		byName[j.Team+"/"+j.Name] = j
	}
	return tr, byName
}

func within(got, want, slack time.Duration) bool { return got >= want && got <= want+slack }

// berth record --since reads the Jobs a team ran on the cluster back as
// the rows that would run them again: team, class, kind, shape and run
// time; a namespace of no team is reported with its count, and
// --anonymize leaves no name behind.
func TestRecord(t *testing.T) {
	stray := namespace(t)
	id := fmt.Sprint(time.Now().UnixNano() % 100000)
	train := recordJob(t, scaffold.Training, "rec-train-"+id, 2, 1, 4*time.Second)
	batch := recordJob(t, scaffold.Batch, "rec-batch-"+id, 1, 0, 2*time.Second)
	runJobs(t, train, batch, jobFor(stray, "stray", "1s"))
	// A Job its TTL deletes once it has finished: read mode cannot record
	// it, and says so by name, from the events that outlive it.
	ttl := recordJob(t, scaffold.Batch, "rec-ttl-"+id, 1, 0, time.Second)
	ttl.Spec.TTLSecondsAfterFinished = ptr.To[int32](3)
	runJobs(t, ttl)
	eventually(t, time.Minute, "job "+ttl.Name+" deleted by its TTL", func() (bool, error) {
		_, err := client.BatchV1().Jobs(ttl.Namespace).Get(context.Background(), ttl.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	home := t.TempDir()
	out := filepath.Join(home, "last-hour.csv")
	_, errOut, code := berthOut(t, home, "record", "--kubeconfig", kubeconfig, "-f", "testdata/e2e.yaml", "--since", "1h", "-o", out)
	if code != 0 {
		t.Fatalf("berth record exited %d:\n%s", code, errOut)
	}
	_, rows := rowsOf(t, out)
	if data, err := readFile(out); err == nil {
		t.Logf("berth record --since 1h wrote:\n%s\nand said:\n%s", data, errOut)
	}
	created := func(j *batchv1.Job) time.Time {
		got, err := client.BatchV1().Jobs(j.Namespace).Get(context.Background(), j.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.CreationTimestamp.Time
	}
	for _, tc := range []struct {
		job         *batchv1.Job
		kind        scaffold.Kind
		class       string
		pods        int32
		gpus        int64
		cpu, memory string
		run         time.Duration
	}{
		{train, scaffold.Training, "training", 2, 1, "4", "16Gi", 4 * time.Second},
		{batch, scaffold.Batch, "batch", 1, 0, "500m", "1Gi", 2 * time.Second},
	} {
		r, ok := rows["team-a/"+tc.job.Name]
		if !ok {
			t.Errorf("no row team-a/%s in the recording; rows %v\n%s", tc.job.Name, rows, errOut)
			continue
		}
		if r.Kind != tc.kind || r.Class != tc.class || r.Pods != tc.pods || r.GPUs != tc.gpus || r.CPU.String() != tc.cpu || r.Memory.String() != tc.memory {
			t.Errorf("row %s: %s, class %s, %d pods of %d GPUs, cpu %s, memory %s; want %s, class %s, %d pods of %d GPUs, cpu %s, memory %s",
				r.Name, r.Kind, r.Class, r.Pods, r.GPUs, r.CPU.String(), r.Memory.String(), tc.kind, tc.class, tc.pods, tc.gpus, tc.cpu, tc.memory)
		}
		// KWOK completes a pod on the whole second after its run time.
		if !within(r.Duration, tc.run, 2*time.Second) {
			t.Errorf("row %s runs %v; want %v (up to 2 s more)", r.Name, r.Duration, tc.run)
		}
	}
	tr, _ := rowsOf(t, out)
	// Only this test's rows: the suite's other tests run Jobs of team-a too.
	ours := &trace.Trace{Jobs: []trace.Job{rows["team-a/"+train.Name], rows["team-a/"+batch.Name]}}
	if ps := ours.Check(bp); len(ps) > 0 {
		t.Errorf("the recording does not check against the blueprint it was recorded on, as a rehearsal checks it:\n%v", ps)
	}
	for _, j := range []*batchv1.Job{train, batch} {
		r := rows["team-a/"+j.Name]
		if at := tr.Start.Add(r.Submit); !at.Equal(created(j)) {
			t.Errorf("row %s submitted at %v; want the Job's creation, %v", r.Name, at, created(j))
		}
	}
	if _, ok := rows["team-a/stray"]; ok {
		t.Errorf("the Job of a namespace of no team was recorded under team-a")
	}
	if want := "Namespace/" + stray + ": warning: maps to no team"; !strings.Contains(errOut, want) || !strings.Contains(errOut, "1 workload in it is left out") {
		t.Errorf("the summary does not report namespace %s, of no team, with its count:\n%s", stray, errOut)
	}
	if _, ok := rows["team-a/"+ttl.Name]; ok {
		t.Errorf("a Job its TTL deleted was recorded")
	}
	if !strings.Contains(errOut, "team-a/"+ttl.Name) || !strings.Contains(errOut, "gone, deleted by a ttlSecondsAfterFinished") {
		t.Errorf("the summary does not name %s, deleted by its TTL, as gone:\n%s", ttl.Name, errOut)
	}
	if !strings.Contains(errOut, "ttlSecondsAfterFinished") || !strings.Contains(errOut, "--watch") {
		t.Errorf("the summary does not say what it cannot see, and the fix:\n%s", errOut)
	}

	anon := filepath.Join(home, "anonymous.csv")
	mustBerth(t, home, "record", "--kubeconfig", kubeconfig, "-f", "testdata/e2e.yaml", "--since", "1h", "--anonymize", "-o", anon)
	_, rows = rowsOf(t, anon)
	if _, ok := rows["team-a/"+record.Anonymous("job", "team-a", train.Name)]; !ok {
		t.Errorf("no row %s for %s in the anonymous recording", record.Anonymous("job", "team-a", train.Name), train.Name)
	}
	if data, _ := readFile(anon); strings.Contains(string(data), id) {
		t.Errorf("the anonymous recording names the Jobs:\n%s", data)
	}
}

// berth record --watch writes a Job that finishes while it watches, once;
// a second run onto the same file keeps it and adds nothing twice.
func TestRecordWatch(t *testing.T) {
	home := t.TempDir()
	out := filepath.Join(home, "watch.csv")
	id := fmt.Sprint(time.Now().UnixNano() % 100000)
	cmd := harness.Command(t, home, "record", "--kubeconfig", kubeconfig, "-f", "testdata/e2e.yaml", "--watch", "--for", "30s", "-o", out)
	var stderr harness.LockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the watch started", func() (bool, error) { return strings.Contains(stderr.String(), "Watching"), nil })
	job := recordJob(t, scaffold.Batch, "rec-watch-"+id, 1, 0, 2*time.Second)
	runJobs(t, job)
	eventually(t, 20*time.Second, "the row written", func() (bool, error) {
		data, _ := readFile(out)
		return strings.Contains(string(data), job.Name), nil
	})
	if err := cmd.Wait(); err != nil {
		t.Fatalf("berth record --watch --for 30s: %v\n%s", err, stderr.String())
	}
	_, rows := rowsOf(t, out)
	if r, ok := rows["team-a/"+job.Name]; !ok || !within(r.Duration, 2*time.Second, 2*time.Second) {
		t.Errorf("the watch wrote %+v for %s; want a row of 2 s (up to 2 s more)\n%s", r, job.Name, stderr.String())
	}

	// Resumed with --since, which would write the Job again: the file has it.
	_, errOut, code := berthOut(t, home, "record", "--kubeconfig", kubeconfig, "-f", "testdata/e2e.yaml", "--watch", "--since", "1h", "--for", "3s", "-o", out)
	if code != 0 {
		t.Fatalf("the resumed watch exited %d:\n%s", code, errOut)
	}
	data, _ := readFile(out)
	if n := strings.Count(string(data), job.Name+","); n != 1 {
		t.Errorf("the resumed file has %d rows of %s; want 1:\n%s", n, job.Name, data)
	}
	if strings.Count(string(data), trace.Header) != 1 {
		t.Errorf("the resumed file has its header again:\n%s", data)
	}
}
