package rehearse

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
	"berth.io/berth/internal/simtime"
)

// epoch is where the unit tests' timelines start.
var epoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// timelineAt is a timeline starting at start on a clock standing at now.
func timelineAt(start, now time.Time) timeline {
	return timeline{clock: clocktesting.NewFakePassiveClock(now), start: start}
}

// A job of one pod that runs an hour and checkpoints every 15 minutes,
// on a timeline that started an hour before the clock's now.
func checkpointedJob(t *testing.T, start time.Time) (*recorder, *jobRun, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Teams: []v1alpha1.Team{{Name: "team-a", Namespaces: []string{"team-a"}}}}}
	r := newRecorder(client, timelineAt(start, start.Add(time.Hour)), bp)
	w := &workload{job: trace.Job{Team: "team-a", Kind: scaffold.Training, Name: "ft", Pods: 1, GPUs: 2, Duration: time.Hour, Checkpoint: 15 * time.Minute}, namespace: "team-a", class: "training"}
	r.submitting(w, start)
	r.submitted(w, start, nil)
	return r, r.jobs["team-a/ft"], client
}

// The Job controller can make a Job's pod, and the pod informer deliver
// it running, before the submitter's create returns: the pod still
// counts for its Job, which starts and waits no time.
func TestPodSeenBeforeItsJobsCreateReturnedCountsForIt(t *testing.T) {
	start := epoch
	client := fake.NewClientset()
	bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Teams: []v1alpha1.Team{{Name: "team-a", Namespaces: []string{"team-a"}}}}}
	r := newRecorder(client, timelineAt(start, start), bp)
	w := &workload{job: trace.Job{Team: "team-a", Kind: scaffold.Training, Name: "ft", Pods: 1, GPUs: 1, Duration: time.Hour}, namespace: "team-a", class: "training"}

	r.submitting(w, start)
	r.onPod(jobPod("1", "ft-a", corev1.PodRunning), false) // while the create is in flight
	r.submitted(w, start, nil)

	j := r.jobs["team-a/ft"]
	if j.started != 1 || !j.allStarted.Equal(start) {
		t.Fatalf("the Job counts %d pods started, all at %v; want 1, at the submission", j.started, j.allStarted)
	}
	rep := r.report(start.Add(time.Minute), Options{Blueprint: &v1alpha1.Blueprint{}, Trace: &trace.Trace{}})
	if got := rep.Jobs[0]; got.Wait == nil || *got.Wait != 0 {
		t.Errorf("the report gives the Job a wait of %v; want 0", got.Wait)
	}
}

func jobPod(uid, name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID(uid), Labels: map[string]string{
			v1alpha1.LabelRehearsal: "training", batchv1.JobNameLabel: "ft",
		}},
		Spec:   corev1.PodSpec{NodeName: "gpu-0", Containers: []corev1.Container{{Name: "ft"}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func interrupted(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonTerminationByKubelet}}
	return p
}

// A pod interrupted 40 minutes into an hour's work that checkpoints
// every 15 saves 30 and loses 10; its replacement runs the 30 left, and
// the report counts the lost work times the pod's GPUs.
func TestInterruptedPodResumesFromItsCheckpoint(t *testing.T) {
	start := epoch
	r, j, client := checkpointedJob(t, start)
	first := jobPod("1", "ft-a", corev1.PodRunning)
	if _, err := client.CoreV1().Pods("team-a").Create(context.Background(), jobPod("2", "ft-b", corev1.PodPending), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.onPod(first, false)
	r.mu.Lock()
	r.pods["1"].started = start // ran from the trace's start
	r.mu.Unlock()
	fortyMinutes := start.Add(40 * time.Minute)
	r.mu.Lock()
	r.end(r.pods["1"], interrupted(first), fortyMinutes)
	r.mu.Unlock()

	if j.lost != 10*time.Minute || len(j.saved) != 1 || j.saved[0] != 30*time.Minute {
		t.Fatalf("lost %s, saved %v; want 10m lost and 30m saved", j.lost, j.saved)
	}
	if j.interruptions != 1 || j.preemptions != 0 {
		t.Errorf("interruptions %d, preemptions %d; want 1 and 0", j.interruptions, j.preemptions)
	}
	r.onPod(jobPod("2", "ft-b", corev1.PodPending), false)
	r.patches.Wait()
	got, err := client.CoreV1().Pods("team-a").Get(context.Background(), "ft-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Annotations[v1alpha1.AnnotationDuration]; d != "1800000ms" {
		t.Errorf("the replacement runs %q; want 1800000ms (30 minutes)", d)
	}
	rep := r.report(fortyMinutes, Options{Blueprint: &v1alpha1.Blueprint{}, Trace: &trace.Trace{}})
	if got := rep.Jobs[0].LostGPUHours; got < 0.333 || got > 0.334 {
		t.Errorf("lost GPU-hours %v; want 10 minutes of 2 GPUs, 0.333", got)
	}
}

// A replacement the Job made before the end of the pod it replaces was
// seen waits for that end, then resumes from its checkpoint all the same.
func TestReplacementSeenFirstResumesWhenItsPredecessorEnds(t *testing.T) {
	start := epoch
	r, j, client := checkpointedJob(t, start)
	if _, err := client.CoreV1().Pods("team-a").Create(context.Background(), jobPod("2", "ft-b", corev1.PodPending), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := jobPod("1", "ft-a", corev1.PodRunning)
	r.onPod(first, false)
	r.mu.Lock()
	r.pods["1"].started = start
	r.mu.Unlock()
	r.onPod(jobPod("2", "ft-b", corev1.PodPending), false)
	if len(j.awaiting) != 1 {
		t.Fatalf("awaiting %d replacements; want 1", len(j.awaiting))
	}
	r.mu.Lock()
	r.end(r.pods["1"], interrupted(first), start.Add(50*time.Minute))
	r.mu.Unlock()
	r.patches.Wait()
	got, _ := client.CoreV1().Pods("team-a").Get(context.Background(), "ft-b", metav1.GetOptions{})
	if d := got.Annotations[v1alpha1.AnnotationDuration]; d != "900000ms" {
		t.Errorf("the replacement runs %q; want 15000ms (the 15 minutes after the 45-minute checkpoint)", d)
	}
	if j.lost != 5*time.Minute {
		t.Errorf("lost %s; want 5m", j.lost)
	}
}

// A pod preempted by the scheduler counts as a preemption, not an
// interruption; with no checkpoint all its work is lost.
func TestPreemptedPodWithoutCheckpointLosesItsWork(t *testing.T) {
	start := epoch
	r, j, _ := checkpointedJob(t, start)
	j.w.job.Checkpoint = 0
	p := jobPod("1", "ft-a", corev1.PodRunning)
	r.onPod(p, false)
	r.mu.Lock()
	r.pods["1"].started = start
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler}}
	r.end(r.pods["1"], p, start.Add(20*time.Minute))
	r.mu.Unlock()
	if j.preemptions != 1 || j.interruptions != 0 || j.lost != 20*time.Minute || j.saved[0] != 0 {
		t.Errorf("preemptions %d, interruptions %d, lost %s, saved %v; want 1, 0, 20m, [0s]", j.preemptions, j.interruptions, j.lost, j.saved)
	}
}

// A pool's levels integrate to node-hours and idle GPU-hours in trace
// time, and its time at zero counts from the start.
func TestPoolHoursInTraceTime(t *testing.T) {
	start := epoch
	bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Pools: []v1alpha1.Pool{{Name: "gpu"}}}}
	r := newRecorder(fake.NewClientset(), timelineAt(start, start), bp)
	p := r.pools["gpu"]
	// No node for 10 minutes, then two nodes of 4 GPUs for an hour, two
	// GPUs of them held for half an hour.
	p.nodes.set(start.Add(10*time.Minute), 2)
	p.gpus.set(start.Add(10*time.Minute), 8)
	p.allocated.set(start.Add(10*time.Minute), 2)
	p.allocated.set(start.Add(40*time.Minute), 0)
	rep := r.report(start.Add(70*time.Minute), Options{Blueprint: bp, Trace: &trace.Trace{}})
	pr := rep.Pools[0]
	if pr.NodeHours != 2 || pr.GPUHours != 8 || pr.GPUHoursAllocated != 1 || pr.GPUHoursIdle != 7 || time.Duration(pr.AtZero) != 10*time.Minute {
		t.Errorf("pool %+v; want 2 node-hours, 8 GPU-hours, 1 allocated, 7 idle, 10m at zero", pr)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for p, want := range map[float64]time.Duration{50: 5, 95: 10, 100: 10, 10: 1} {
		if got := percentile(ds, p); got != want {
			t.Errorf("p%g = %d; want %d", p, got, want)
		}
	}
	if percentile(nil, 95) != 0 {
		t.Error("the percentile of no waits is not 0")
	}
}

// A report reads back from its JSON as it was written, cost included:
// `berth rehearse --vs` reads its children's reports so.
func TestReportJSONRoundTrip(t *testing.T) {
	start := epoch
	bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Pools: []v1alpha1.Pool{{Name: "gpu", Capacity: v1alpha1.OnDemand, Price: &v1alpha1.Price{OnDemand: 1_230_000}}}}}
	r := newRecorder(fake.NewClientset(), timelineAt(start, start), bp)
	r.pools["gpu"].nodes.set(start.Add(10*time.Minute), 2)
	prices := prices.Price(bp, prices.Shipped(), "")
	rep := r.report(start.Add(70*time.Minute), Options{Blueprint: bp, Trace: &trace.Trace{}, Prices: prices, Clock: simtime.NewClock(start, 0)})
	if rep.Cost == nil || rep.Cost.Total == 0 {
		t.Fatalf("no cost: %+v", rep.Cost)
	}
	first, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(first, &back); err != nil {
		t.Fatalf("reading the report back: %v", err)
	}
	second, _ := json.Marshal(&back)
	if string(first) != string(second) {
		t.Errorf("the report changed on its way back:\n%s\n%s", first, second)
	}
}

// The report's tolerance is the clock's step: every moment it measures
// is a whole multiple of it.
func TestToleranceIsTheClocksStep(t *testing.T) {
	r, _, _ := checkpointedJob(t, epoch)
	rep := r.report(epoch.Add(time.Minute), Options{Blueprint: &v1alpha1.Blueprint{}, Trace: &trace.Trace{}, Clock: simtime.NewClock(epoch, 0)})
	if rep.Tolerance != report.Duration(time.Second) {
		t.Errorf("tolerance %s; want the clock's step, 1s", rep.Tolerance)
	}
}

// The pod and node informers deliver on goroutines of their own: a pod
// seen running before its node is counted on the node's pool (read from
// the API server here), and the node's own event later counts it once.
func TestPodSeenBeforeItsNodeCountsOnItsPool(t *testing.T) {
	start := epoch
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{v1alpha1.LabelPool: "gpu", v1alpha1.LabelGPUCount: "4"}}}
	bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Pools: []v1alpha1.Pool{{Name: "gpu"}}}}
	r := newRecorder(fake.NewClientset(node), timelineAt(start, start.Add(time.Minute)), bp)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p", UID: "p", Labels: map[string]string{v1alpha1.LabelRehearsal: "x"}},
		Spec:       corev1.PodSpec{NodeName: "gpu-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	r.onPod(pod, false)
	if got := r.pods["p"].pool; got != "gpu" {
		t.Fatalf("the pod's pool is %q; want gpu, its node's", got)
	}
	r.onNode(node, false)
	if n := r.pools["gpu"].nodes.v; n != 1 {
		t.Errorf("pool gpu counts %v nodes after the pod's and the node's events; want 1", n)
	}
	if _, ok := r.pools[""]; ok {
		t.Errorf("the recorder made a pool with no name")
	}
}

// A level that changes several times within one moment counts only the
// value it holds when the clock moves on: its peak and its points do not
// depend on the order the machine ran the moment's changes in.
func TestLevelCountsTheMomentsLastValue(t *testing.T) {
	l := level{keep: true}
	l.set(epoch, 0)
	at := epoch.Add(time.Minute)
	for _, v := range []float64{1, 2, 3, 2} { // passes through 3 within the moment
		l.set(at, v)
	}
	got := l.at(epoch.Add(time.Hour))
	if got.peak != 2 {
		t.Errorf("peak %v; want 2, the moment's last value", got.peak)
	}
	if len(got.points) != 2 || got.points[1].v != 2 || !got.points[1].at.Equal(at) {
		t.Errorf("points %+v; want 0 at the start and 2 at a minute", got.points)
	}
	if want := 2 * 59 * 60.0; got.area != want {
		t.Errorf("area %v; want %v", got.area, want)
	}
}

// A job interrupted on spot that resumes on demand names both pools, in
// the order its pods started on them.
func TestJobRanOnNamesThePoolsInOrder(t *testing.T) {
	start := epoch
	r, _, client := checkpointedJob(t, start)
	for _, n := range []struct{ name, pool string }{{"spot-gpu-0", "spot-gpu"}, {"gpu-0", "gpu"}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{v1alpha1.LabelPool: n.pool, v1alpha1.LabelGPUCount: "2"}}}
		if _, err := client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first := jobPod("1", "ft-a", corev1.PodRunning)
	first.Spec.NodeName = "spot-gpu-0"
	r.onPod(first, false)
	r.mu.Lock()
	r.end(r.pods["1"], interrupted(first), start.Add(40*time.Minute))
	r.mu.Unlock()
	second := jobPod("2", "ft-b", corev1.PodRunning)
	second.Spec.NodeName = "gpu-0"
	r.onPod(second, false)
	r.patches.Wait()

	rep := r.report(start.Add(time.Hour), Options{Blueprint: &v1alpha1.Blueprint{}, Trace: &trace.Trace{}})
	if got, want := rep.Jobs[0].RanOn, []string{"spot-gpu", "gpu"}; !slices.Equal(got, want) {
		t.Errorf("the job ran on %v; want %v", got, want)
	}
}

// A Job waits from its submission until all its pods have started,
// whether or not it has a pod pending: one the quota holds back has
// none, and the chart of what waits must show it all the same.
func TestJobWaitsUntilItsPodsStart(t *testing.T) {
	start := epoch
	r, _, _ := checkpointedJob(t, start) // submitted at start; no pod yet
	if r.waiting.v != 1 || r.pending.v != 0 {
		t.Fatalf("after the submission: %v jobs waiting, %v pods pending; want 1 and 0", r.waiting.v, r.pending.v)
	}
	r.onPod(jobPod("1", "ft-a", corev1.PodRunning), false) // starts an hour in
	got := r.tl.points(&r.waiting, start.Add(time.Hour))
	want := []report.Point{{T: 0, V: 1}, {T: report.Duration(time.Hour), V: 0}, {T: report.Duration(time.Hour), V: 0}}
	if !slices.Equal(got, want) {
		t.Errorf("jobs waiting over the hour: %v; want %v", got, want)
	}
}

// A class's volumes count from when each is seen until it is deleted or
// the rehearsal ends, priced at the class's pricePerGiBMonth over a
// 730-hour month; two volumes held at once make the peak.
func TestStorageGiBHoursAndCost(t *testing.T) {
	start := epoch
	bp, _, err := blueprint.Parse("b.yaml", []byte(`apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: shop}
spec:
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  storage:
    classes:
    - {name: standard, default: true, pricePerGiBMonth: "0.073"}
`))
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(start)
	r := newRecorder(fake.NewClientset(), timeline{clock: clk, start: start}, bp)
	volume := func(name, gib string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			StorageClassName: "standard", Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(gib)}}}
	}
	r.onVolume(volume("a", "100Gi"), false)
	clk.SetTime(start.Add(time.Hour))
	r.onVolume(volume("b", "50Gi"), false)
	clk.SetTime(start.Add(2 * time.Hour))
	r.onVolume(volume("a", "100Gi"), true)

	got := r.storage(start.Add(3*time.Hour), bp)
	if len(got) != 1 {
		t.Fatalf("storage %+v; want one class", got)
	}
	s := got[0]
	// a: 100 GiB for 2 h; b: 50 GiB for 2 h.
	if s.Class != "standard" || s.Volumes != 2 || s.PeakGiB != 150 || s.GiBHours != 300 {
		t.Errorf("storage %+v; want 2 volumes, peak 150 GiB, 300 GiB-hours", s)
	}
	if s.Cost == nil || math.Abs(*s.Cost-300*0.073/730) > 1e-9 {
		t.Errorf("cost %v; want 300 GiB-hours at $0.073 a GiB-month, $%.4f", s.Cost, 300*0.073/730)
	}
}

// A checkpointed Job's replacement pod counts its wait, from when it was
// seen until it ran, as the report's replacement wait.
func TestReplacementWaitOfCheckpointedTraining(t *testing.T) {
	start := epoch
	r, j, _ := checkpointedJob(t, start)
	j.w.claimed = true
	first := jobPod("1", "ft-a", corev1.PodRunning)
	r.onPod(first, false) // seen, and started, at the clock's now: start + 1h
	r.mu.Lock()
	r.end(r.pods["1"], interrupted(first), start.Add(time.Hour))
	r.mu.Unlock()
	second := jobPod("2", "ft-b", corev1.PodPending)
	r.onPod(second, false) // the replacement, seen at start + 1h
	r.mu.Lock()
	second.Status.Phase = corev1.PodRunning
	r.start(r.pods["2"], second, start.Add(time.Hour+7*time.Minute))
	r.mu.Unlock()
	r.patches.Wait()

	rep := r.report(start.Add(2*time.Hour), Options{Blueprint: &v1alpha1.Blueprint{}, Trace: &trace.Trace{}})
	got := rep.Jobs[0]
	if !got.Claimed || got.Replacements != 1 || got.ReplacementWait == nil || time.Duration(*got.ReplacementWait) != 7*time.Minute {
		t.Errorf("claimed %v, replacements %d, wait %v; want a claimed Job whose one replacement waited 7m", got.Claimed, got.Replacements, got.ReplacementWait)
	}
}

// A pod the API server stamped created at one moment and the recorder
// first sees at a later one came late: the recorder counts it, and not
// one seen at the moment it was made (the stamp has whole seconds, the
// clock's moments may not).
func TestPodSeenAfterItsMomentCountsLate(t *testing.T) {
	start := epoch.Add(300 * time.Millisecond)
	clk := clocktesting.NewFakePassiveClock(start.Add(time.Minute))
	bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Teams: []v1alpha1.Team{{Name: "team-a", Namespaces: []string{"team-a"}}}}}
	r := newRecorder(fake.NewClientset(), timeline{clock: clk, start: start}, bp)

	onTime := jobPod("1", "ft-a", corev1.PodPending)
	onTime.CreationTimestamp = metav1.NewTime(clk.Now().Truncate(time.Second))
	r.onPod(onTime, false)
	if r.late != 0 {
		t.Fatalf("a pod seen at the moment it was stamped counts %d late; want 0", r.late)
	}
	late := jobPod("2", "ft-b", corev1.PodPending)
	late.CreationTimestamp = metav1.NewTime(clk.Now().Truncate(time.Second))
	clk.SetTime(clk.Now().Add(7 * time.Second))
	r.onPod(late, false)
	if r.late != 1 {
		t.Errorf("a pod seen 7 s after it was stamped counts %d late; want 1", r.late)
	}
}
