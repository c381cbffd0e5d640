//go:build long

package rehearse_test

import (
	"testing"
	"time"
)

// TestRehearseInterruption replays a one-GPU training job of an hour
// that checkpoints every 15 minutes on a spot pool whose one node is up
// from the start, with the trace's interruption of the pool at minute
// 40, and checks the report against the hand calculation (notice N =
// 30 s, provisioning P = 10 minutes, the autoscaler's scan every 10 s,
// the Job's condition and its pods a second after their cause: jobDone):
//
//	start        0 (the node is up): wait 0
//	40m          the notice; the pod stops at 40m+N, the node goes with it,
//	             30m of work saved
//	lost         40m+N − 30m                     = 10m30s × 1 GPU = 0.175 GPU-h
//	restart      the replacement (the Job's own, a second later: the class's
//	             podFailurePolicy ignores a DisruptionTarget failure, so
//	             backoffLimit counts nothing) waits for a new node, asked at
//	             the next scan: nextScan(40m+N+jobDone) + P = 50m40s
//	end          50m40s + the 30m left + jobDone  = 1h20m41s, the job's run
//	spot-gpu     up 0–40m30s and 50m40s–end; at zero between
//
// Mutations it catches: a replacement that does not resume from the
// checkpoint runs the whole hour again (ends near 1h50m); a Job without
// the pod failure policy counts the interruption against backoffLimit.
func TestRehearseInterruption(t *testing.T) {
	r := rehearseJSON(t, "-f", "testdata/rehearse-spot.yaml", "--trace", "testdata/rehearse-interruption.yaml")
	if len(r.Jobs) != 1 {
		t.Fatalf("%d jobs in the report; want 1", len(r.Jobs))
	}
	const (
		notice = 30 * time.Second
		p      = 10 * time.Minute
	)
	j := r.Jobs[0]
	exactly(t, r, "the job's wait", waited(t, r, j), 0)
	if j.Interruptions != 1 || j.Preemptions != 0 {
		t.Errorf("job %s: %d interruptions and %d preemptions; want 1 and 0", j.Name, j.Interruptions, j.Preemptions)
	}
	if j.BackoffFailures != 0 {
		t.Errorf("job %s: %d failures counted against backoffLimit; want 0, the pod failure policy ignores an interruption", j.Name, j.BackoffFailures)
	}
	stopped := 40*time.Minute + notice
	exactlyHours(t, r, "the job's lost GPU-hours", j.LostGPUHours, stopped-30*time.Minute)
	restart := nextScan(stopped+jobDone) + p
	end := restart + 30*time.Minute + jobDone
	exactly(t, r, "the job's run", ran(t, r, j), end)
	if len(r.Disruptions) != 1 {
		t.Fatalf("%d disruptions in the report; want the trace's one: %+v", len(r.Disruptions), r.Disruptions)
	}
	d := r.Disruptions[0]
	if d.Pool != "spot-gpu" || len(d.Nodes) != 1 || d.Error != "" || time.Duration(d.Notice) != notice {
		t.Errorf("disruption %+v; want spot-gpu's one node given a 30s notice", d)
	}
	exactly(t, r, "the interruption's moment", time.Duration(d.At), 40*time.Minute)
	spot := reportPool(t, r, "spot-gpu")
	if spot.PeakNodes != 1 {
		t.Errorf("pool spot-gpu peaked at %d nodes; want 1", spot.PeakNodes)
	}
	exactly(t, r, "spot-gpu's time at zero", time.Duration(spot.AtZero), restart-stopped)
	exactlyHours(t, r, "spot-gpu's node-hours", spot.NodeHours, stopped+(end-restart))
}
