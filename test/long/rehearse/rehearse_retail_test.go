//go:build long

package rehearse_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/test/harness"
)

// rehearseJSON runs `berth rehearse -o json` with args and reads its
// report.
func rehearseJSON(t *testing.T, args ...string) *report.Report {
	t.Helper()
	r := harness.Rehearse(t, args...)
	for _, j := range r.Jobs {
		t.Logf("%s: job %s %s, wait %s, run %s, interruptions %d, lost %.3f GPU-h", r.Blueprint, j.Name, j.State, orNone(j.Wait), orNone(j.Run), j.Interruptions, j.LostGPUHours)
	}
	for _, p := range r.Pools {
		t.Logf("%s: pool %s %.3f node-h, peak %d, %.3f GPU-h held, at zero %s", r.Blueprint, p.Name, p.NodeHours, p.PeakNodes, p.GPUHoursAllocated, p.AtZero)
	}
	return r
}

func orNone(d *report.Duration) string {
	if d == nil {
		return "none"
	}
	return d.String()
}

// reportPool is the report's pool name.
func reportPool(t *testing.T, r *report.Report, name string) report.PoolResult {
	t.Helper()
	for _, p := range r.Pools {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("%s: no pool %s in %+v", r.Blueprint, name, r.Pools)
	return report.PoolResult{}
}

// poolCost is what the report says pool name cost, in dollars.
func poolCost(t *testing.T, r *report.Report, name string) float64 {
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
func waits(t *testing.T, r *report.Report) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, j := range r.Jobs {
		if j.State != report.Completed || j.Wait == nil {
			t.Fatalf("%s: job %s %s (wait %v); want completed", r.Blueprint, j.Name, j.State, j.Wait)
		}
		out = append(out, time.Duration(*j.Wait))
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// TestRehearseRetailByHand replays four one-GPU training jobs of an hour,
// submitted together by team-a, on the retail GPU pools (spot-gpu first
// by the priority expander, then on-demand gpu 0-2; P = 10 minutes to
// provision a GPU node; spot $0.40 and on-demand $1.00 a node-hour), and
// checks the report against the hand calculation. The rehearsal stops
// when the last Job completes, a second after its pod (jobDone), so a
// node still up then counts to that moment.
//
// Spot 0-4. The scan at 10 s (scan) grows spot-gpu by four nodes (one
// GPU each; the quota of 4 GPUs holds all four); they register at scan+P
// and the jobs run from then:
//
//	waits            scan+P each                          = 10m10s
//	runs             1h + jobDone each
//	spot-gpu         4 nodes × (1h + jobDone), 4 GPU-hours held, at zero scan+P
//	gpu              never grows
//	cost             spot-gpu's node-hours × $0.40
//
// Spot 0-1: the waves. The scan at 10 s grows spot-gpu by its one node;
// a scan grows one pool, so the next, at 20 s, spills two pods to gpu,
// its max; the fourth fits nowhere and waits for the first node to free,
// the spot node at scan+P+1h (the class prefers it):
//
//	waits            scan+P, 2·scan+P twice, scan+P+1h    = 10m10s, 10m20s ×2, 1h10m10s
//	end              scan+P+1h + 1h + jobDone
//	spot-gpu         1 node from scan+P to the end, 2 GPU-hours held
//	gpu              2 nodes from 2·scan+P until unneeded (10 minutes) after
//	                 their pods end, at 2·scan+P+1h, a point of the scan grid:
//	                 2 × (1h + unneeded); at zero before them and after them
//	cost             spot-gpu × $0.40, gpu × $1.00
func TestRehearseRetailByHand(t *testing.T) {
	const p = 10 * time.Minute
	four := rehearseJSON(t, "-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-retail.csv")
	for _, j := range four.Jobs {
		exactly(t, four, j.Name+"'s wait", waited(t, four, j), scan+p)
		exactly(t, four, j.Name+"'s run", ran(t, four, j), time.Hour+jobDone)
	}
	spot, gpu := reportPool(t, four, "spot-gpu"), reportPool(t, four, "gpu")
	if spot.PeakNodes != 4 || gpu.PeakNodes != 0 {
		t.Errorf("%s: spot-gpu peaked at %d nodes and gpu at %d; want 4 and 0", four.Blueprint, spot.PeakNodes, gpu.PeakNodes)
	}
	exactlyHours(t, four, "spot-gpu's node-hours", spot.NodeHours, 4*(time.Hour+jobDone))
	exactlyHours(t, four, "spot-gpu's GPU-hours held", spot.GPUHoursAllocated, 4*time.Hour)
	exactly(t, four, "spot-gpu's time at zero", time.Duration(spot.AtZero), scan+p)
	if got, want := cents(t, four, "spot-gpu"), priced(4*(time.Hour+jobDone), 0.40); got != want {
		t.Errorf("%s: spot-gpu cost %d cents; want %d", four.Blueprint, got, want)
	}
	if got := cents(t, four, "gpu"); got != 0 {
		t.Errorf("%s: gpu cost %d cents; it never grew", four.Blueprint, got)
	}

	one := rehearseJSON(t, "-f", "testdata/rehearse-retail-spot1.yaml", "--trace", "testdata/rehearse-retail.csv")
	ws := waits(t, one)
	for i, want := range []time.Duration{scan + p, 2*scan + p, 2*scan + p, scan + p + time.Hour} {
		exactly(t, one, fmt.Sprintf("wait %d (shortest first)", i+1), ws[i], want)
	}
	for _, j := range one.Jobs {
		exactly(t, one, j.Name+"'s run", ran(t, one, j), time.Hour+jobDone)
	}
	end := scan + p + 2*time.Hour + jobDone
	exactly(t, one, "the rehearsal's end", time.Duration(one.Rehearsed), end)
	spot, gpu = reportPool(t, one, "spot-gpu"), reportPool(t, one, "gpu")
	if spot.PeakNodes != 1 || gpu.PeakNodes != 2 {
		t.Errorf("%s: spot-gpu peaked at %d nodes and gpu at %d; want 1 and 2 (the spill)", one.Blueprint, spot.PeakNodes, gpu.PeakNodes)
	}
	exactlyHours(t, one, "spot-gpu's node-hours", spot.NodeHours, end-(scan+p))
	exactlyHours(t, one, "spot-gpu's GPU-hours held", spot.GPUHoursAllocated, 2*time.Hour)
	gpuUp := 2*scan + p
	gpuGone := gpuUp + time.Hour + unneeded
	exactlyHours(t, one, "gpu's node-hours", gpu.NodeHours, 2*(gpuGone-gpuUp))
	exactlyHours(t, one, "gpu's GPU-hours held", gpu.GPUHoursAllocated, 2*time.Hour)
	exactly(t, one, "gpu's time at zero", time.Duration(gpu.AtZero), gpuUp+(end-gpuGone))
	if got, want := cents(t, one, "spot-gpu"), priced(end-(scan+p), 0.40); got != want {
		t.Errorf("%s: spot-gpu cost %d cents; want %d", one.Blueprint, got, want)
	}
	if got, want := cents(t, one, "gpu"), priced(2*(gpuGone-gpuUp), 1.00); got != want {
		t.Errorf("%s: gpu cost %d cents; want %d", one.Blueprint, got, want)
	}
}

// TestRehearseWithoutProvisioningTime replays the same four jobs on the
// retail template as `berth init` writes it, whose pools leave
// provisioningTime unset: a new node is Ready at once. The template's
// expander is random, which seed 1 makes pick gpu at the scan at 10 s: it
// grows by its max of 2 for two of the jobs; a scan grows one pool, so the
// next, at 20 s, grows spot-gpu for the last two:
//
//	waits   scan, scan, 2·scan, 2·scan   = 10s, 10s, 20s, 20s
//	runs    1h + jobDone each
//
// No control plane latency and no machine's speed in either: on the wall
// clock rehearsals had before, at speed 240, these jobs waited 6 to 7
// minutes and ran up to 1 h 3 min 51 s.
func TestRehearseWithoutProvisioningTime(t *testing.T) {
	bp := harness.Template(t, "retail")
	r := rehearseJSON(t, "-f", bp, "--trace", "testdata/rehearse-retail.csv", "--seed", "1")
	for _, j := range r.Jobs {
		exactly(t, r, j.Name+"'s run", ran(t, r, j), time.Hour+jobDone)
	}
	for _, j := range r.Jobs {
		want := map[string]time.Duration{"gpu": scan, "spot-gpu": 2 * scan}
		if len(j.RanOn) != 1 {
			t.Errorf("job %s ran on %v; want one GPU pool", j.Name, j.RanOn)
			continue
		}
		exactly(t, r, j.Name+"'s wait on "+j.RanOn[0], waited(t, r, j), want[j.RanOn[0]])
	}
	if g, s := reportPool(t, r, "gpu"), reportPool(t, r, "spot-gpu"); g.PeakNodes != 2 || s.PeakNodes != 2 {
		t.Errorf("gpu peaked at %d nodes, spot-gpu at %d; want 2 and 2", g.PeakNodes, s.PeakNodes)
	}
}
