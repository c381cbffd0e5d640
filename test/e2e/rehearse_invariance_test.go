package e2e

import (
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse"
)

// jobsByName are a report's jobs by name.
func jobsByName(r *rehearse.Report) map[string]rehearse.JobResult {
	out := map[string]rehearse.JobResult{}
	for _, j := range r.Jobs {
		out[j.Name] = j
	}
	return out
}

// poolsByName are a report's pools by name.
func poolsByName(r *rehearse.Report) map[string]rehearse.PoolResult {
	out := map[string]rehearse.PoolResult{}
	for _, p := range r.Pools {
		out[p.Name] = p
	}
	return out
}

// scaleUps is the order in which the report's autoscaled pools grew: a
// pool's name each time its nodes went up. The system pool's nodes, there
// before the clock starts, are no scale-up.
func scaleUps(r *rehearse.Report) []string {
	type up struct {
		at   rehearse.Duration
		pool string
	}
	var ups []up
	for pool, points := range r.Series.Nodes {
		if pool == "system" {
			continue
		}
		for i := 1; i < len(points); i++ {
			if points[i].V > points[i-1].V {
				ups = append(ups, up{points[i].T, pool})
			}
		}
	}
	sort.Slice(ups, func(a, b int) bool { return ups[a].at < ups[b].at })
	var out []string
	for _, u := range ups {
		out = append(out, u.pool)
	}
	return out
}

// nodesStarted counts the nodes a pool started over the rehearsal.
func nodesStarted(r *rehearse.Report, pool string) int {
	n := 0
	points := r.Series.Nodes[pool]
	for i := 1; i < len(points); i++ {
		if d := points[i].V - points[i-1].V; d > 0 {
			n += int(d)
		}
	}
	return n
}

// TestRehearseCompressionHolds replays one trace at speed 30 and at speed
// 240 and finds the same waits and node-hours: within 5%, or within the
// two reports' tolerances together, whichever is larger. The tolerance
// is the floor compression cannot take away: a pod's start time has
// whole seconds and the control plane takes its time to react, about two
// seconds of wall time in all, which is a minute of trace time at speed
// 30 and eight at speed 240 (the report lists the unscaled timers and
// gives its tolerance), plus how late the busy machine submitted.
func TestRehearseCompressionHolds(t *testing.T) {
	args := []string{"-f", "testdata/rehearse-bounds.yaml", "--trace", "testdata/rehearse-bounds.csv"}
	slow := rehearseJSON(t, append(args, "--speed", "30")...)
	fast := rehearseJSON(t, append(args, "--speed", "240")...)
	bound := time.Duration(slow.Tolerance + fast.Tolerance)
	t.Logf("tolerance: %s at speed 30, %s at speed 240", time.Duration(slow.Tolerance), time.Duration(fast.Tolerance))

	near := func(what string, a, b, bound float64) {
		t.Helper()
		t.Logf("%s: %.3f at speed 30, %.3f at speed 240", what, a, b)
		if d := math.Abs(a - b); d > math.Max(0.05*a, bound) {
			t.Errorf("%s: %.3f at speed 30, %.3f at speed 240: %.3f apart; want within 5%% (%.3f) or the tolerances' %.3f", what, a, b, d, 0.05*a, bound)
		}
	}
	fastJobs := jobsByName(fast)
	for name, s := range jobsByName(slow) {
		f := fastJobs[name]
		if s.State != rehearse.Completed || f.State != rehearse.Completed || s.Wait == nil || f.Wait == nil {
			t.Errorf("job %s: %s at speed 30, %s at speed 240; want completed at both", name, s.State, f.State)
			continue
		}
		near("job "+name+"'s wait (minutes)", time.Duration(*s.Wait).Minutes(), time.Duration(*f.Wait).Minutes(), bound.Minutes())
	}
	// third waits for the quota, first for its node: a compression that
	// lost the quota's part would show third as early as first.
	for _, r := range []*rehearse.Report{slow, fast} {
		if j := jobsByName(r); j["third"].Wait == nil || time.Duration(*j["third"].Wait) < 30*time.Minute || time.Duration(j["third"].QuotaRefused) < 20*time.Minute {
			t.Errorf("speed %g: third waited %v (quota-refused %s); want 38 minutes or so, most of them refused by the quota", r.Speed, j["third"].Wait, time.Duration(j["third"].QuotaRefused))
		}
	}
	fastPools := poolsByName(fast)
	for name, s := range poolsByName(slow) {
		if s.NodeHours == 0 {
			continue
		}
		// Each node's creation and the rehearsal's end can each move by
		// a tolerance.
		nodes := max(nodesStarted(slow, name), nodesStarted(fast, name))
		near("pool "+name+"'s node-hours", s.NodeHours, fastPools[name].NodeHours, 2*float64(nodes)*bound.Hours())
	}
}

// TestRehearseRepeatable replays one trace twice with the same seed: the
// same decisions (every job's end, the order in which pools grew, the
// spot interruption and whom it hit, and so where each job ran, which
// the node-hours show), and waits, lost work and node-hours apart by no
// more than the two reports' tolerances, which say how far the machine's
// timing can move them.
func TestRehearseRepeatable(t *testing.T) {
	args := []string{"-f", "testdata/rehearse-repeat.yaml", "--trace", "testdata/rehearse-repeat.csv", "--speed", "120", "--seed", "15"}
	a := rehearseJSON(t, args...)
	b := rehearseJSON(t, args...)
	bound := time.Duration(a.Tolerance + b.Tolerance)
	t.Logf("tolerance: %s and %s", time.Duration(a.Tolerance), time.Duration(b.Tolerance))

	aJobs, bJobs := jobsByName(a), jobsByName(b)
	if got := aJobs["long"].Interruptions; got != 1 {
		t.Errorf("long was interrupted %d times; want once (seed 15's interruption at 18 minutes)", got)
	}
	for name, x := range aJobs {
		y := bJobs[name]
		if x.State != y.State || x.Interruptions != y.Interruptions || x.Preemptions != y.Preemptions {
			t.Errorf("job %s: %s with %d interruptions and %d preemptions, then %s with %d and %d", name, x.State, x.Interruptions, x.Preemptions, y.State, y.Interruptions, y.Preemptions)
		}
		if x.State != rehearse.Completed {
			t.Errorf("job %s %s; want completed", name, x.State)
		}
		if x.Wait == nil || y.Wait == nil {
			continue
		}
		wa, wb := time.Duration(*x.Wait), time.Duration(*y.Wait)
		t.Logf("job %s waited %s, then %s", name, wa, wb)
		if d := (wa - wb).Abs(); d > bound {
			t.Errorf("job %s waited %s, then %s: %s apart; want at most the tolerances' %s", name, wa, wb, d, bound)
		}
		// The interruption's moment moves by a tolerance in each run, and
		// the work lost with it (one GPU).
		la, lb := x.LostGPUHours, y.LostGPUHours
		t.Logf("job %s lost %.3f GPU-hours, then %.3f", name, la, lb)
		if d := math.Abs(la - lb); d > bound.Hours() {
			t.Errorf("job %s lost %.3f GPU-hours, then %.3f; want at most %.3f apart", name, la, lb, bound.Hours())
		}
	}
	ua, ub := scaleUps(a), scaleUps(b)
	t.Logf("pools grew in the order %v, then %v", ua, ub)
	if want := []string{"spot-gpu", "gpu", "spot-gpu"}; !slices.Equal(ua, want) || !slices.Equal(ub, want) {
		t.Errorf("pools grew in the order %v, then %v; want %v both times", ua, ub, want)
	}
	bPools := poolsByName(b)
	for name, x := range poolsByName(a) {
		y := bPools[name]
		nodes := max(nodesStarted(a, name), nodesStarted(b, name), 1)
		limit := 2 * float64(nodes) * bound.Hours()
		t.Logf("pool %s: %.3f node-hours, then %.3f (at most %.3f apart)", name, x.NodeHours, y.NodeHours, limit)
		if d := math.Abs(x.NodeHours - y.NodeHours); d > limit {
			t.Errorf("pool %s: %.3f node-hours, then %.3f: %.3f apart; want at most %.3f", name, x.NodeHours, y.NodeHours, d, limit)
		}
	}
}
