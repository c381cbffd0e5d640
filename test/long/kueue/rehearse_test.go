//go:build long

package kueue_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	jobcontroller "k8s.io/kubernetes/pkg/controller/job"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/simtime"
	"berth.io/berth/test/harness"
)

// TestRehearseKueue replays testdata/reclaim-trace.yaml on kueue.yaml
// with Kueue's controllers (berth-kueue) on the rehearsal's clock: team-b
// borrows team-a's GPUs, team-a reclaims them at 20m, and the report
// says so per team: GPU-hours borrowed and lent, two preemptions by
// reclaim, time suspended, the preempted pods counted as Kueue's (not
// interruptions), every Job done. Replayed again under a speed ceiling,
// and again with every core busy, every figure is the same: Kueue keeps
// the rehearsal's time, not the machine's, across the two processes.
// (Before Kueue's requeue of inadmissible workloads was put on the
// clock, the second replay admitted a preempted Job on another flavor
// and ended 8 minutes sooner.)
func TestRehearseKueue(t *testing.T) {
	args := []string{"-f", "testdata/kueue.yaml", "--trace", "testdata/reclaim-trace.yaml"}
	fast := harness.Rehearse(t, args...)
	if fast.Queueing != "Kueue" {
		t.Fatalf("the report's queueing is %q; want Kueue", fast.Queueing)
	}
	queues := map[string]report.QueueResult{}
	for _, q := range fast.Queues {
		queues[q.Team] = q
		t.Logf("queue %s: suspended %s (max %s), borrowed %.3f GPU-h, lent %.3f GPU-h, preempted by reclaim %d, priority %d, fair sharing %d",
			q.Team, time.Duration(q.Suspended), time.Duration(q.SuspendedMax), q.BorrowedGPUHours, q.LentGPUHours, q.PreemptedReclaim, q.PreemptedPriority, q.PreemptedFairSharing)
	}
	a, b := queues["team-a"], queues["team-b"]
	if b.PreemptedReclaim != 2 || a.PreemptedReclaim != 0 {
		t.Errorf("preemptions by reclaim: team-b %d, team-a %d; want 2 (its borrowed Jobs) and 0", b.PreemptedReclaim, a.PreemptedReclaim)
	}
	// team-b borrowed only from team-a (team-c and team-d lend
	// nothing), so what it borrowed team-a lent.
	if b.BorrowedGPUHours <= 0 {
		t.Errorf("team-b borrowed %.3f GPU-hours; want some: it ran four Jobs on two GPUs of its own", b.BorrowedGPUHours)
	}
	if a.LentGPUHours != b.BorrowedGPUHours || queues["team-c"].LentGPUHours != 0 || queues["team-d"].LentGPUHours != 0 {
		t.Errorf("lent: team-a %.3f, team-c %.3f, team-d %.3f GPU-hours; want team-b's %.3f borrowed, all from team-a",
			a.LentGPUHours, queues["team-c"].LentGPUHours, queues["team-d"].LentGPUHours, b.BorrowedGPUHours)
	}
	// The two preempted Jobs waited suspended from 20m until team-a's
	// Jobs ended, 30 minutes later at the least.
	if time.Duration(b.SuspendedMax) < 30*time.Minute {
		t.Errorf("team-b's longest time suspended is %s; want 30m at the least (its preempted Jobs wait out team-a's)", time.Duration(b.SuspendedMax))
	}
	requeued := 0
	for _, j := range fast.Jobs {
		if j.State != report.Completed {
			t.Errorf("job %s/%s: %s; want completed", j.Team, j.Name, j.State)
		}
		requeued += j.Requeued
		if j.Interruptions != 0 {
			t.Errorf("job %s/%s: %d interruptions; want none (Kueue's preemptions are counted as requeued)", j.Team, j.Name, j.Interruptions)
		}
	}
	if requeued != 2 {
		t.Errorf("%d pods ended because Kueue suspended their Jobs; want 2", requeued)
	}

	handWorked(t, fast)

	capped, progress := harness.RehearseProgress(t, append(args, "--speed", "600")...)
	// Paced for a person, it says how to watch it.
	if !strings.Contains(progress, "Watch it: berth dash --kubeconfig ") {
		t.Errorf("a rehearsal at --speed 600 does not say how to watch it in berth dash:\n%s", progress)
	}
	stop := harness.KeepCoresBusy(t)
	busy := harness.Rehearse(t, args...)
	stop()
	for _, r := range []*report.Report{fast, capped, busy} {
		t.Logf("speed %g: %s of trace in %s of wall time, %d clock steps", r.Speed, time.Duration(r.Rehearsed), time.Duration(r.Wall), r.Clock.Steps)
	}
	same := cmpopts.IgnoreFields(report.Report{}, "Speed", "Wall", "Clock")
	if diff := cmp.Diff(fast, capped, same); diff != "" {
		t.Errorf("the report at --speed 600 differs from the one as fast as the cluster settles (-fast +capped):\n%s", diff)
	}
	if diff := cmp.Diff(fast, busy, same); diff != "" {
		t.Errorf("the report with every core busy differs from the one on an idle machine (-idle +busy):\n%s", diff)
	}
}

// handWorked checks the reclaim trace's report against its hand
// calculation, every figure exact to the clock's step. The timings it
// needs, each from where it is set: the autoscaler's scan grid (scan,
// from the replay's start) and unneeded time; the Job controller's
// batching of a Job's pod updates (jobDone, how long after its pod ends
// a Job is Complete); the clock's step, in which Kueue admits a Job
// whose quota a preemption has just freed. kueue.yaml sets no
// provisioning time: a node asked for is there at once.
//
//	b1  0s   spot: the scan at 10s adds a spot node     wait scan   runs to 10s+1h
//	b2  1m   on-demand (team-b's nominal), the scan at 1m         wait 0     to 1m+1h
//	b3  2m   spot, borrowed from team-a, the scan at 2m           wait 0
//	b4  3m   on-demand, borrowed, the scan at 3m                  wait 0
//	a1  20m  Kueue preempts b3 (reclaim), admits a1 a step later  wait step  30m on b3's node
//	a2  21m  the same with b4                                      wait step  30m
//	b3  suspended from 20m until a1's Job is done, 20m+step+30m+jobDone; runs 1h again
//	b4  suspended from 21m until a2's is done, 21m+step+30m+jobDone; runs 1h again
//
// team-b borrows while b3 and b4 run beside b1 and b2: from their starts
// to the reclaim, and from their readmission to b1's and b2's ends. The
// first nodes go once unneeded for unneeded: b1's spot node at
// 10s+1h+unneeded, b2's at 1m+1h+unneeded.
func handWorked(t *testing.T, r *report.Report) {
	t.Helper()
	var (
		scan     = v1alpha1.DefaultScanInterval
		unneeded = v1alpha1.DefaultScaleDownUnneededTime
		jobDone  = jobcontroller.SyncJobBatchPeriod
		step     = simtime.DefaultStep
		hour     = time.Hour
	)
	b3Back := 20*time.Minute + step + 30*time.Minute + jobDone
	b4Back := 21*time.Minute + step + 30*time.Minute + jobDone
	want := map[string]struct{ submit, wait, run time.Duration }{
		"b1": {0, scan, hour + jobDone},
		"b2": {time.Minute, 0, hour + jobDone},
		"b3": {2 * time.Minute, 0, b3Back + hour + jobDone - 2*time.Minute},
		"b4": {3 * time.Minute, 0, b4Back + hour + jobDone - 3*time.Minute},
		"a1": {20 * time.Minute, step, 30*time.Minute + jobDone},
		"a2": {21 * time.Minute, step, 30*time.Minute + jobDone},
	}
	tolerance := time.Duration(r.Tolerance)
	exactly := func(what string, got, want time.Duration) {
		t.Helper()
		if (got - want).Abs() > tolerance {
			t.Errorf("%s is %s; the hand calculation gives %s", what, got, want)
		}
	}
	for _, j := range r.Jobs {
		w, ok := want[j.Name]
		if !ok || j.Wait == nil || j.Run == nil {
			t.Errorf("job %s/%s: not in the trace, or with no wait or run (%s)", j.Team, j.Name, j.State)
			continue
		}
		exactly(j.Name+"'s wait", time.Duration(*j.Wait), w.wait)
		exactly(j.Name+"'s run", time.Duration(*j.Run), w.run)
	}
	queues := map[string]report.QueueResult{}
	for _, q := range r.Queues {
		queues[q.Team] = q
	}
	a, b := queues["team-a"], queues["team-b"]
	exactly("team-b's time suspended", time.Duration(b.Suspended), (b3Back-20*time.Minute)+(b4Back-21*time.Minute))
	exactly("team-b's longest suspension", time.Duration(b.SuspendedMax), b4Back-21*time.Minute)
	exactly("team-a's time suspended", time.Duration(a.Suspended), 2*step)
	borrowed := (20*time.Minute - 2*time.Minute) + (21*time.Minute - 3*time.Minute) +
		(scan + hour - b3Back) + (time.Minute + hour - b4Back)
	if math.Abs(b.BorrowedGPUHours-borrowed.Hours()) > 4*step.Hours() {
		t.Errorf("team-b borrowed %.4f GPU-hours; the hand calculation gives %.4f (%s)", b.BorrowedGPUHours, borrowed.Hours(), borrowed)
	}
	for pool, down := range map[string]time.Duration{"spot-gpu": scan + hour + unneeded, "gpu": time.Minute + hour + unneeded} {
		points := r.Series.Nodes[pool]
		var at time.Duration = -1
		for i := 1; i < len(points); i++ {
			if points[i].V < points[i-1].V {
				at = time.Duration(points[i].T)
				break
			}
		}
		exactly("the first of pool "+pool+"'s nodes removed", at, down)
	}
}
