//go:build long

package kueue_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"berth.io/berth/internal/rehearse/report"
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

	capped := harness.Rehearse(t, append(args, "--speed", "600")...)
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
