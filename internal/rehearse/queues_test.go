package rehearse

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
)

// kueueBlueprint: two teams of 2 GPUs each on one GPU pool, under Kueue.
func kueueBlueprint() *v1alpha1.Blueprint {
	two := resource.MustParse("2")
	team := func(name string) v1alpha1.Team {
		return v1alpha1.Team{Name: name, Namespaces: []string{name}, Quota: &v1alpha1.Quota{GPU: &two},
			Queue: &v1alpha1.TeamQueue{GPUs: []v1alpha1.PoolGPUs{{Pool: "gpu", Count: 2}}}}
	}
	return &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Queueing: v1alpha1.QueueingKueue,
		Pools: []v1alpha1.Pool{{Name: "gpu"}}, Teams: []v1alpha1.Team{team("team-a"), team("team-b")}}}
}

// team-b runs 4 GPUs for an hour, 2 of them team-a's, which uses none:
// 2 GPU-hours borrowed by team-b and lent by team-a. Then team-a takes
// one back: half an hour of 1 borrowed, 1 lent.
func TestQueuesBorrowedAndLent(t *testing.T) {
	start := epoch
	q := newQueues(kueueBlueprint(), start)
	q.use(start, "team-b", "gpu", 4)
	q.use(start.Add(time.Hour), "team-b", "gpu", -1)
	q.use(start.Add(time.Hour), "team-a", "gpu", 1)
	res := q.results(start.Add(90*time.Minute), nil)
	byTeam := map[string]float64{}
	for _, r := range res {
		byTeam[r.Team+" borrowed"] = r.BorrowedGPUHours
		byTeam[r.Team+" lent"] = r.LentGPUHours
	}
	for k, want := range map[string]float64{"team-b borrowed": 2.5, "team-a lent": 2.5, "team-a borrowed": 0, "team-b lent": 0} {
		if byTeam[k] != want {
			t.Errorf("%s: %.2f GPU-hours; want %.2f", k, byTeam[k], want)
		}
	}
}

// A Job Kueue holds suspended counts its time in the queue until Kueue
// admits it; one Kueue preempts for a reclaiming team counts, by the
// reason in Kueue's event, once however often the informer delivers it,
// and its pod's end is Kueue's doing, not an interruption.
func TestQueuesSuspensionAndReclaim(t *testing.T) {
	start := epoch
	client := fake.NewClientset()
	r := newRecorder(client, timelineAt(start, start), kueueBlueprint())
	w := &workload{job: trace.Job{Team: "team-b", Kind: scaffold.Training, Name: "ft", Pods: 1, GPUs: 1, Duration: time.Hour}, namespace: "team-b", class: "training"}
	r.submitting(w, start)
	r.submitted(w, start, nil)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "ft", Labels: map[string]string{v1alpha1.LabelRehearsal: "training"}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true)}}
	r.onJob(job, false)
	r.tl = timelineAt(start, start.Add(20*time.Minute))
	job.Spec.Suspend = ptr.To(false)
	r.onJob(job, false)
	r.tl = timelineAt(start, start.Add(30*time.Minute))
	job.Spec.Suspend = ptr.To(true)
	r.onJob(job, false)
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "ft.1", UID: "e1"}, Count: 1,
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "team-b", Name: "ft"}, Reason: "Stopped",
		Message: "Preempted to accommodate a workload (UID: 1, JobUID: 2) due to reclamation within the cohort; preemptor path: /team-a; preemptee path: /team-b"}
	r.onEvent(event, false)
	r.onEvent(event, false) // delivered again: the same preemption

	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "ft-a", UID: "p1", Labels: map[string]string{v1alpha1.LabelRehearsal: "training", batchv1.JobNameLabel: "ft"}},
		Spec: corev1.PodSpec{NodeName: "gpu-0", Containers: []corev1.Container{{Name: "ft"}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	r.onPod(p, false)
	r.mu.Lock()
	r.end(r.pods["p1"], p, start.Add(30*time.Minute))
	r.mu.Unlock()

	rep := r.report(start.Add(time.Hour), Options{Blueprint: kueueBlueprint(), Trace: &trace.Trace{}})
	found := false
	for _, q := range rep.Queues {
		if q.Team != "team-b" {
			continue
		}
		found = true
		// Suspended 20 minutes at first, then from 30 minutes to the
		// hour's end.
		if got := time.Duration(q.Suspended); got != 50*time.Minute || q.PreemptedReclaim != 1 || q.PreemptedPriority != 0 {
			t.Errorf("team-b's queue: suspended %v, preempted by reclaim %d, by priority %d; want 50m, 1, 0", got, q.PreemptedReclaim, q.PreemptedPriority)
		}
	}
	if !found {
		t.Fatalf("no queue figures for team-b: %+v", rep.Queues)
	}
	j := rep.Jobs[0]
	if j.Requeued != 1 || j.Interruptions != 0 {
		t.Errorf("the Job's pod ended by Kueue counts requeued %d, interruptions %d; want 1, 0", j.Requeued, j.Interruptions)
	}
}

// A team that lends nothing (queue.lend: 0) is lent from by no one:
// what others borrow comes out of the teams that lend.
func TestQueuesLentByTheTeamsThatLend(t *testing.T) {
	start := epoch
	bp := kueueBlueprint()
	zero := resource.MustParse("0")
	bp.Spec.Teams = append(bp.Spec.Teams, v1alpha1.Team{Name: "team-c", Namespaces: []string{"team-c"},
		Queue: &v1alpha1.TeamQueue{GPUs: []v1alpha1.PoolGPUs{{Pool: "gpu", Count: 2}}, Lend: &zero}})
	q := newQueues(bp, start)
	q.use(start, "team-b", "gpu", 3)
	lent := map[string]float64{}
	for _, r := range q.results(start.Add(time.Hour), nil) {
		lent[r.Team] = r.LentGPUHours
	}
	if lent["team-a"] != 1 || lent["team-c"] != 0 {
		t.Errorf("lent: team-a %.2f, team-c %.2f GPU-hours; want 1 and 0 (team-c lends nothing)", lent["team-a"], lent["team-c"])
	}
}
