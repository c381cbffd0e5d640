package e2e

import (
	"encoding/json"
	"math"
	"sort"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse"
)

// rehearseJSON runs `berth rehearse -o json` with args and reads its
// report.
func rehearseJSON(t *testing.T, args ...string) *rehearse.Report {
	t.Helper()
	out, errOut, code := berthOut(t, t.TempDir(), append([]string{"rehearse", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("berth rehearse %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	var r rehearse.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("reading the report: %v\n%s", err, out)
	}
	t.Logf("berth rehearse %v:\n%s", args, errOut)
	for _, j := range r.Jobs {
		t.Logf("%s: job %s %s, wait %s, run %s, interruptions %d, lost %.3f GPU-h", r.Blueprint, j.Name, j.State, orNone(j.Wait), orNone(j.Run), j.Interruptions, j.LostGPUHours)
	}
	for _, p := range r.Pools {
		t.Logf("%s: pool %s %.3f node-h, peak %d, %.3f GPU-h held, at zero %s", r.Blueprint, p.Name, p.NodeHours, p.PeakNodes, p.GPUHoursAllocated, p.AtZero)
	}
	return &r
}

func orNone(d *rehearse.Duration) string {
	if d == nil {
		return "none"
	}
	return d.String()
}

// reportPool is the report's pool name.
func reportPool(t *testing.T, r *rehearse.Report, name string) rehearse.PoolResult {
	t.Helper()
	for _, p := range r.Pools {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("%s: no pool %s in %+v", r.Blueprint, name, r.Pools)
	return rehearse.PoolResult{}
}

// poolCost is what the report says pool name cost, in dollars.
func poolCost(t *testing.T, r *rehearse.Report, name string) float64 {
	t.Helper()
	if r.Cost == nil {
		t.Fatalf("%s: no cost", r.Blueprint)
	}
	for _, p := range r.Cost.Pools {
		if p.Price.Pool == name {
			if p.Cost == nil {
				t.Fatalf("%s: pool %s has no cost: %v", r.Blueprint, name, p.Problem)
			}
			return float64(*p.Cost) / 100
		}
	}
	t.Fatalf("%s: no cost for pool %s", r.Blueprint, name)
	return 0
}

// waits are the report's jobs' waits, shortest first; a job that did
// not complete fails the test.
func waits(t *testing.T, r *rehearse.Report) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, j := range r.Jobs {
		if j.State != rehearse.Completed || j.Wait == nil {
			t.Fatalf("%s: job %s %s (wait %v); want completed", r.Blueprint, j.Name, j.State, j.Wait)
		}
		out = append(out, time.Duration(*j.Wait))
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// TestRehearseRetailByHand replays four one-GPU training jobs of an hour,
// submitted together by team-a, on the retail GPU pools (spot-gpu 0-4
// first by the priority expander, then on-demand gpu 0-2; each GPU node
// P = 10 minutes to provision; spot $0.40 and on-demand $1.00 a
// node-hour), and checks the report against the hand calculation. The
// rehearsal stops when the last job completes, so a node still up then
// counts to that moment.
//
// Spot 0-4. The first scan grows spot-gpu by four nodes (one GPU each;
// the quota of 4 GPUs holds all four); they register at P and the jobs
// run from P to P+1h:
//
//	waits            P, P, P, P                      = 10m each
//	spot-gpu         4 nodes × (P+1h − P)            = 4.0 node-hours, at zero P
//	gpu              never grows                     = 0 node-hours
//	cost             4.0 × $0.40                     = $1.60 (spot saved 4.0 × $0.60 = $2.40)
//
// Spot 0-1: the waves. The first scan grows spot-gpu by its one node,
// the next (a scan later) spills two pods to gpu, its max; the fourth
// pod fits nowhere and waits for the first wave to end:
//
//	waits            P, P, P for the first wave, P+1h for the fourth = 10m ×3, 1h10m
//	spot-gpu         1 node from P to the end at P+2h          = 2.0 node-hours, 2 GPU-hours held
//	                 (the fourth runs there: its node is free first,
//	                 a scan earlier, and the class prefers spot-gpu)
//	gpu              2 nodes from P to P+1h plus the autoscaler's
//	                 scaleDownUnneededTime of 10m                = 2 × 1h10m = 2.33 node-hours,
//	                 at zero P + (P+2h − (P+1h+10m))             = 1h
//	cost             2.0 × $0.40 + 2.33 × $1.00                  = $0.80 + $2.33
//
// Tolerances: at speed 120 a second of wall time is two minutes of trace,
// and a pod's start time has whole seconds; the device plugin's start on
// a new node and a loaded machine's lag add to a wait. A node-hour figure
// may be off by that per node.
func TestRehearseRetailByHand(t *testing.T) {
	const speed = 120
	p := 10 * time.Minute
	check := func(r *rehearse.Report, what string, got, want, early, late float64) {
		t.Helper()
		if got < want-early || got > want+late {
			t.Errorf("%s: %s is %.3f; want %.3f (from %.3f to %.3f)", r.Blueprint, what, got, want, want-early, want+late)
		}
	}
	slack := func(r *rehearse.Report) time.Duration { return 8*time.Minute + 3*time.Duration(r.SubmitLag)*speed }
	wait := func(r *rehearse.Report, got, want time.Duration) {
		t.Helper()
		check(r, "a wait (minutes)", got.Minutes(), want.Minutes(), 4, slack(r).Minutes())
	}
	// A node's hours may be off by the floors at both ends.
	nodeHours := func(r *rehearse.Report, pool string, nodes int, want float64) {
		t.Helper()
		off := float64(nodes) * slack(r).Hours()
		check(r, "pool "+pool+" node-hours", reportPool(t, r, pool).NodeHours, want, off, off)
	}

	four := rehearseJSON(t, "-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-retail.csv", "--speed", "120")
	for _, w := range waits(t, four) {
		wait(four, w, p)
	}
	spot, gpu := reportPool(t, four, "spot-gpu"), reportPool(t, four, "gpu")
	if spot.PeakNodes != 4 || gpu.PeakNodes != 0 {
		t.Errorf("%s: spot-gpu peaked at %d nodes and gpu at %d; want 4 and 0", four.Blueprint, spot.PeakNodes, gpu.PeakNodes)
	}
	nodeHours(four, "spot-gpu", 4, 4.0)
	// A pod's run may end a floor early or late: its start time has whole seconds.
	check(four, "spot-gpu's GPU-hours held", spot.GPUHoursAllocated, 4.0, 4*slack(four).Hours(), 4*slack(four).Hours())
	check(four, "spot-gpu's time at zero (minutes)", time.Duration(spot.AtZero).Minutes(), p.Minutes(), 4, slack(four).Minutes())
	check(four, "spot-gpu's cost ($)", poolCost(t, four, "spot-gpu"), 0.40*spot.NodeHours, 0.01, 0.01)
	check(four, "spot-gpu's cost against the hand calculation ($)", poolCost(t, four, "spot-gpu"), 1.60, 0.40*4*slack(four).Hours(), 0.40*4*slack(four).Hours())
	check(four, "gpu's cost ($)", poolCost(t, four, "gpu"), 0, 0, 0)

	one := rehearseJSON(t, "-f", "testdata/rehearse-retail-spot1.yaml", "--trace", "testdata/rehearse-retail.csv", "--speed", "120")
	ws := waits(t, one)
	for _, w := range ws[:3] {
		wait(one, w, p)
	}
	wait(one, ws[3], p+time.Hour)
	spot, gpu = reportPool(t, one, "spot-gpu"), reportPool(t, one, "gpu")
	if spot.PeakNodes != 1 || gpu.PeakNodes != 2 {
		t.Errorf("%s: spot-gpu peaked at %d nodes and gpu at %d; want 1 and 2 (the spill)", one.Blueprint, spot.PeakNodes, gpu.PeakNodes)
	}
	nodeHours(one, "spot-gpu", 1, 2.0)
	nodeHours(one, "gpu", 2, 2*70.0/60)
	check(one, "spot-gpu's GPU-hours held", spot.GPUHoursAllocated, 2.0, 2*slack(one).Hours(), 2*slack(one).Hours())
	check(one, "gpu's GPU-hours held", gpu.GPUHoursAllocated, 2.0, 2*slack(one).Hours(), 2*slack(one).Hours())
	check(one, "gpu's time at zero (minutes)", time.Duration(gpu.AtZero).Minutes(), 60, 2*slack(one).Minutes(), 2*slack(one).Minutes())
	check(one, "spot-gpu's cost ($)", poolCost(t, one, "spot-gpu"), 0.80, 0.40*slack(one).Hours(), 0.40*slack(one).Hours())
	check(one, "gpu's cost ($)", poolCost(t, one, "gpu"), 2*70.0/60, 2*slack(one).Hours(), 2*slack(one).Hours())
	if math.Abs(poolCost(t, one, "gpu")-gpu.NodeHours) > 0.01 {
		t.Errorf("%s: gpu cost $%.2f for %.3f node-hours at $1.00", one.Blueprint, poolCost(t, one, "gpu"), gpu.NodeHours)
	}
}
