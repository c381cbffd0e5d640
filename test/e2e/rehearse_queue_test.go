package e2e

import (
	"testing"
	"time"
)

// TestRehearseQueueDrains replays 100 items of 30 s on the retail
// blueprint's batch-inference queue, put there at the start, with the
// queue's worker (berth new batch on class batch-inference: an HPA on the
// depth, 10 items a replica, 0 to 2 replicas of one GPU, a scale-down
// window of 10 minutes, on the gpu pool of 0-2, P = 10 minutes to
// provision a node; the autoscaler's scaleDownUnneededTime is 10
// minutes), and checks the gpu pool against the hand calculation:
//
//	0       the worker at 1 replica, the HPA takes it to 2 (100/10, at most 2): two nodes asked
//	P       both nodes up, both workers Ready: the pool 0 → 2
//	P+25m   100 items, 2 workers, 30 s an item: empty at 35m (10 items left at 32.5m)
//	42.5m   the window has passed since 10 or fewer were left: 1 replica; 45m: 0 replicas
//	52.5m   the first node unneeded for 10 minutes goes: 2 → 1; 55m: the second: 1 → 0
//	at zero P + (1h30m − 55m)                    = 45m
//	node-h  (52.5m − P) + (55m − P)              = 1.46
//
// The report's time at zero must be what its own node series shows: the
// spans before the first node and after the last was deleted. A queue
// that did not drain would keep both workers, and the pool would never
// be back at zero.
func TestRehearseQueueDrains(t *testing.T) {
	const speed = 60
	r := rehearseJSON(t, "-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-queue.yaml", "--speed", "60")
	slack := 5*time.Minute + 3*time.Duration(r.SubmitLag)*speed
	gpu := reportPool(t, r, "gpu")
	if gpu.PeakNodes != 2 {
		t.Errorf("pool gpu peaked at %d nodes; want 2, the worker's most replicas", gpu.PeakNodes)
	}
	if p := reportPool(t, r, "spot-gpu"); p.PeakNodes != 0 {
		t.Errorf("pool spot-gpu grew to %d nodes; the worker's class runs on gpu only", p.PeakNodes)
	}
	if r.Series == nil || len(r.Series.Nodes["gpu"]) == 0 {
		t.Fatalf("the report has no node series for pool gpu")
	}
	// The series: 0 from the start, up to 2, back to 0 to the end.
	pts := r.Series.Nodes["gpu"]
	var up, down time.Duration // first rise, last fall to 0
	var zero time.Duration
	for i, p := range pts {
		if i > 0 && p.V > 0 && up == 0 {
			up = time.Duration(p.T)
		}
		if i > 0 && p.V == 0 && pts[i-1].V > 0 {
			down = time.Duration(p.T)
		}
		if i+1 < len(pts) && p.V == 0 {
			zero += time.Duration(pts[i+1].T - p.T)
		}
	}
	t.Logf("pool gpu: %+v", pts)
	last := pts[len(pts)-1]
	if last.V != 0 || down == 0 {
		t.Fatalf("pool gpu ended at %g nodes (series %+v); want back at 0", last.V, pts)
	}
	if d := time.Duration(gpu.AtZero) - zero; d < -time.Second*speed || d > time.Second*speed {
		t.Errorf("the report's time at zero for pool gpu is %s; its node series is at 0 for %s", gpu.AtZero, zero)
	}
	if up < 10*time.Minute-slack || up > 10*time.Minute+slack {
		t.Errorf("pool gpu's first node came at %s; want 10m, its provisioning time", up)
	}
	if down < 55*time.Minute-slack || down > 55*time.Minute+slack {
		t.Errorf("pool gpu was back at 0 at %s; want 55m: drained at 35m, the worker at 0 a 10m window later, the node unneeded 10m", down)
	}
	if want := 10*time.Minute + 35*time.Minute; time.Duration(gpu.AtZero) < want-2*slack || time.Duration(gpu.AtZero) > want+2*slack {
		t.Errorf("pool gpu at zero %s; want %s", gpu.AtZero, want)
	}
	if want := (42.5 + 45) / 60; gpu.NodeHours < want-2*slack.Hours() || gpu.NodeHours > want+2*slack.Hours() {
		t.Errorf("pool gpu ran %.2f node-hours; want %.2f", gpu.NodeHours, want)
	}
}
