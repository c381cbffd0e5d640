package e2e

import (
	"testing"
	"time"
)

// TestRehearseInterruption replays a one-GPU training job of an hour
// that checkpoints every 15 minutes on a spot pool whose one node is up
// from the start, with the trace's interruption of the pool at minute
// 40, and checks the report against the hand calculation (notice N =
// 30 s, provisioning P = 10 minutes, the autoscaler's scan S = 10 s):
//
//	start        0 (the node is up)
//	40m          the notice; the pod stops at 40m+N, 30m of work saved
//	lost         40m+N − 30m                     = 10m30s × 1 GPU = 0.175 GPU-h
//	restart      the replacement (the Job's own: the class's podFailurePolicy
//	             ignores a DisruptionTarget failure, so backoffLimit counts
//	             nothing) waits for a new node: N + P + S   ≈ 10m40s
//	end          40m + 10m40s + the 30m left     ≈ 1h20m40s
//	late         1h20m40s − 1h = the 10m30s lost + the 10m10s restart
//
// Mutations it catches: a replacement that does not resume from the
// checkpoint runs the whole hour again (ends near 1h50m); a Job without
// the pod failure policy counts the interruption against backoffLimit.
func TestRehearseInterruption(t *testing.T) {
	const speed = 60
	r := rehearseJSON(t, "-f", "testdata/rehearse-spot.yaml", "--trace", "testdata/rehearse-interruption.yaml", "--speed", "60")
	if len(r.Jobs) != 1 {
		t.Fatalf("%d jobs in the report; want 1", len(r.Jobs))
	}
	j := r.Jobs[0]
	// At speed 60 a second of wall time is a minute of trace; a loaded
	// machine adds its lag.
	slack := 3*time.Minute + 3*time.Duration(r.SubmitLag)*speed
	if j.State != "completed" || j.Wait == nil || j.Run == nil {
		t.Fatalf("job %s %s (wait %s, run %s); want completed: the Job survives its interruption", j.Name, j.State, orNone(j.Wait), orNone(j.Run))
	}
	if w := time.Duration(*j.Wait); w > slack {
		t.Errorf("job %s waited %s; want about 0, its node up from the start", j.Name, w)
	}
	if j.Interruptions != 1 || j.Preemptions != 0 {
		t.Errorf("job %s: %d interruptions and %d preemptions; want 1 and 0", j.Name, j.Interruptions, j.Preemptions)
	}
	if j.BackoffFailures != 0 {
		t.Errorf("job %s: %d failures counted against backoffLimit; want 0, the pod failure policy ignores an interruption", j.Name, j.BackoffFailures)
	}
	lost := time.Duration(j.LostGPUHours * float64(time.Hour))
	if lost < 10*time.Minute-slack || lost > 10*time.Minute+30*time.Second+slack {
		t.Errorf("job %s lost %s of GPU time; want 10m30s (the work since the checkpoint at 30m, and the notice)", j.Name, lost)
	}
	end := time.Duration(*j.Wait) + time.Duration(*j.Run)
	if want := 80*time.Minute + 40*time.Second; end < want-slack || end > want+slack {
		t.Errorf("job %s ended at %s; want %s: an hour, 10m30s lost and a 10m10s restart on a new node", j.Name, end, want)
	}
	if len(r.Disruptions) != 1 {
		t.Fatalf("%d disruptions in the report; want the trace's one: %+v", len(r.Disruptions), r.Disruptions)
	}
	d := r.Disruptions[0]
	if at := time.Duration(d.At); d.Pool != "spot-gpu" || len(d.Nodes) != 1 || d.Error != "" || at < 40*time.Minute || at > 40*time.Minute+slack || time.Duration(d.Notice) != 30*time.Second {
		t.Errorf("disruption %+v; want spot-gpu's one node given a 30s notice at 40m", d)
	}
	if p := reportPool(t, r, "spot-gpu"); p.PeakNodes != 1 || time.Duration(p.AtZero) < 10*time.Minute-slack {
		t.Errorf("pool spot-gpu peaked at %d nodes and was at zero %s; want 1, and about 10m at zero while its new node provisioned", p.PeakNodes, p.AtZero)
	}
}
