//go:build long

package rehearse_test

import (
	"testing"
	"time"
)

// TestRehearseQueueDrains replays 100 items of 30 s on the retail
// blueprint's batch-inference queue, put there at the start, with the
// queue's worker (berth new batch on class batch-inference: an HPA on the
// depth, 10 items a replica, 0 to 2 replicas of one GPU, a scale-down
// window of 10 minutes, on the gpu pool of 0-2, P = 10 minutes to
// provision a node), and checks the gpu pool against the hand
// calculation, each moment exact to the clock's step:
//
//	0        the worker's first replica, pending: the scan at 10s asks a node, up at scan+P = 10m10s
//	15s      the HPA's first sync, a sync period after it was made (the
//	         controller queues a new HPA rate-limited): 100/10 → 2
//	         replicas; the scan at 20s asks the second node: 10m20s
//	10m20s   both workers Ready; the first has done 10 s of its item
//	32m45s   90 items done (10 s + 2 × 1345 s = 2700 s of work): 10 left,
//	         and the sync then recommends 1 replica
//	35m15s   100 items done (10 s + 2 × 1495 s): the sync recommends 0
//	42m30s   the sync at 32m30s, the last to recommend 2, leaves the
//	         10-minute window: 1 replica; its node is unneeded from then
//	45m0s    the sync at 35m0s (1 item left, 1 replica) leaves it: 0
//	52m30s   the first node unneeded for 10 minutes goes: 2 → 1
//	55m0s    the second: 1 → 0, to the end at 1h30m
//
//	node-h   (52m30s − 10m10s) + (55m0s − 10m20s) = 1.45
//	at zero  10m10s + (1h30m − 55m0s)             = 45m10s
//
// A queue that did not drain would keep both workers, and the pool would
// never be back at zero.
func TestRehearseQueueDrains(t *testing.T) {
	r := rehearseJSON(t, "-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-queue.yaml")
	const (
		p      = 10 * time.Minute // the gpu pool's provisioningTime
		window = 10 * time.Minute // the HPA's scale-down window
	)
	if r.Series == nil || len(r.Series.Nodes["gpu"]) == 0 {
		t.Fatalf("the report has no node series for pool gpu")
	}
	pts := r.Series.Nodes["gpu"]
	t.Logf("pool gpu: %+v", pts)
	want := []struct {
		at time.Duration
		v  float64
	}{
		{0, 0},
		{scan + p, 1},
		{2*scan + p, 2},
		{32*time.Minute + 30*time.Second + window + unneeded, 1},
		{35*time.Minute + window + unneeded, 0},
		{90 * time.Minute, 0},
	}
	if len(pts) != len(want) {
		t.Fatalf("pool gpu's nodes went %+v; want the steps %+v", pts, want)
	}
	for i, w := range want {
		exactly(t, r, "gpu step "+w.at.String(), time.Duration(pts[i].T), w.at)
		if pts[i].V != w.v {
			t.Errorf("at %s pool gpu had %g nodes; want %g", w.at, pts[i].V, w.v)
		}
	}
	gpu := reportPool(t, r, "gpu")
	exactlyHours(t, r, "gpu's node-hours", gpu.NodeHours, (52*time.Minute+30*time.Second-(scan+p))+(55*time.Minute-(2*scan+p)))
	exactly(t, r, "gpu's time at zero", time.Duration(gpu.AtZero), scan+p+(90*time.Minute-55*time.Minute))
	if gpu.PeakNodes != 2 {
		t.Errorf("pool gpu peaked at %d nodes; want 2, the worker's most replicas", gpu.PeakNodes)
	}
	if sp := reportPool(t, r, "spot-gpu"); sp.PeakNodes != 0 {
		t.Errorf("pool spot-gpu grew to %d nodes; the worker's class runs on gpu only", sp.PeakNodes)
	}
}
