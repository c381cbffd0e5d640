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

// TestRehearseInterruptionHoldsTheZone replays TestRehearseInterruption's
// job with its checkpoint claim on two single-zone spot pools: spot-a
// (zone-1, its node up from the start, where the job and its volume
// start) and spot-b (zone-2, at zero). When spot-a is interrupted at 40m
// the replacement can only run in zone-1, where its volume is: spot-b,
// free to grow at once, stays at zero (the autoscaler's simulation runs
// the scheduler's VolumeZone plugin), and the replacement waits for
// spot-a's new node, as in TestRehearseInterruption:
//
//	created      40m+N+jobDone (the Job's replacement)
//	started      nextScan(40m+N+jobDone) + P
//	replacement wait, in the report: started − created
//	storage      one 50 GiB volume of class standard from the first
//	             pod's scheduling (0) to the end
//
// Mutations it catches: a claim left out (spot-b may grow and run the
// replacement); a simulation without the volume plugins (the expander
// may pick spot-b, whose node the pod cannot use).
func TestRehearseInterruptionHoldsTheZone(t *testing.T) {
	r := rehearseJSON(t, "-f", "testdata/rehearse-spot-zones.yaml", "--trace", "testdata/rehearse-interruption-a.yaml")
	if len(r.Jobs) != 1 {
		t.Fatalf("%d jobs in the report; want 1", len(r.Jobs))
	}
	const (
		notice = 30 * time.Second
		p      = 10 * time.Minute
	)
	j := r.Jobs[0]
	if !j.Claimed || j.Replacements != 1 || j.ReplacementWait == nil {
		t.Fatalf("job %s: claimed %v, %d replacements, wait %v; want its claim and one replacement", j.Name, j.Claimed, j.Replacements, j.ReplacementWait)
	}
	if len(j.RanOn) != 1 || j.RanOn[0] != "spot-a" {
		t.Errorf("job %s ran on %v; want spot-a alone, its volume's zone", j.Name, j.RanOn)
	}
	stopped := 40*time.Minute + notice
	created := stopped + jobDone
	restart := nextScan(created) + p
	exactly(t, r, "the replacement's wait", time.Duration(*j.ReplacementWait), restart-created)
	exactly(t, r, "the job's run", ran(t, r, j), restart+30*time.Minute+jobDone)
	if b := reportPool(t, r, "spot-b"); b.PeakNodes != 0 {
		t.Errorf("pool spot-b (zone-2) peaked at %d nodes; want 0: the replacement can only run in zone-1", b.PeakNodes)
	}
	if len(r.Storage) != 1 {
		t.Fatalf("storage %+v; want class standard's one volume", r.Storage)
	}
	s := r.Storage[0]
	if s.Class != "standard" || s.Volumes != 1 || s.PeakGiB != 50 || s.Cost == nil {
		t.Errorf("storage %+v; want one 50 GiB volume of standard, priced", s)
	}
	exactlyHours(t, r, "the volume's GiB-hours / 50", s.GiBHours/50, time.Duration(r.Rehearsed))
}
