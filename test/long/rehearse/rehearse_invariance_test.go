//go:build long

package rehearse_test

import (
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/test/harness"
)

// sameFigures compares two reports of one rehearsal, leaving out what
// the machine spent on them (the wall time, the clock's settling) and
// the speed ceiling: every figure, decision and series must be equal.
var sameFigures = cmpopts.IgnoreFields(report.Report{}, "Speed", "Wall", "Clock")

// TestRehearseProvisioningAndQuota replays three one-GPU jobs a minute
// apart on two GPU nodes that take P = 10 minutes to provision and a
// team quota of two GPUs, and checks every figure against the hand
// calculation, each exact to the clock's step:
//
//	first    submitted 0: the scan at 10s asks a node    wait scan+P = 10m10s   run 30m + jobDone
//	second   submitted 1m, a point of the scan grid      wait P      = 10m0s    run 45m + jobDone
//	third    submitted 2m, refused by the quota until
//	         first ends at 40m11s; the Job retries with
//	         its API backoff from 2m: quotaRetry(38m11s) wait 39m3s, all of it refused by the quota
//	                                                                            run 15m + jobDone, on first's node
//	end      2m + 39m3s + 15m1s                                     = 56m4s
//	gpu      (56m4s − 10m10s) + (56m4s − 11m0s) node-hours          = 1.51611 h, no node ever unneeded 10 minutes
func TestRehearseProvisioningAndQuota(t *testing.T) {
	r := rehearseJSON(t, "-f", "testdata/rehearse-bounds.yaml", "--trace", "testdata/rehearse-bounds.csv")
	const p = 10 * time.Minute
	first, second, third := jobNamed(t, r, "first"), jobNamed(t, r, "second"), jobNamed(t, r, "third")
	exactly(t, r, "first's wait", waited(t, r, first), scan+p)
	exactly(t, r, "first's run", ran(t, r, first), 30*time.Minute+jobDone)
	exactly(t, r, "second's wait", waited(t, r, second), nextScan(time.Minute)+p-time.Minute)
	exactly(t, r, "second's run", ran(t, r, second), 45*time.Minute+jobDone)
	firstEnds := scan + p + 30*time.Minute + jobDone
	retry := quotaRetry(firstEnds - 2*time.Minute)
	exactly(t, r, "third's wait", waited(t, r, third), retry)
	exactly(t, r, "third's quota-refused time", time.Duration(third.QuotaRefused), retry)
	exactly(t, r, "third's run", ran(t, r, third), 15*time.Minute+jobDone)
	end := 2*time.Minute + retry + 15*time.Minute + jobDone
	exactly(t, r, "the rehearsal's end", time.Duration(r.Rehearsed), end)
	exactlyHours(t, r, "gpu's node-hours", reportPool(t, r, "gpu").NodeHours, (end-(scan+p))+(end-(time.Minute+p)))
	exactlyHours(t, r, "system's node-hours", reportPool(t, r, "system").NodeHours, end)
	if got := reportPool(t, r, "gpu").PeakNodes; got != 2 {
		t.Errorf("pool gpu peaked at %d nodes; want 2: third runs on first's node", got)
	}
}

// TestRehearseInvariance replays one trace with each thing whose timing
// a rehearsal measures (testdata/rehearse-invariance.yaml: training on
// spot that the trace interrupts, a team's third job refused by its
// quota, CPU batch, an inference service through a traffic step) as
// fast as the cluster settles, under a speed ceiling, and as fast again
// while other processes keep every core busy: the three reports must be
// equal in every figure, the decisions too (which pools each job ran on,
// in which order, and the pools' node series). Only the wall time and
// what the clock spent settling may differ.
func TestRehearseInvariance(t *testing.T) {
	args := []string{"-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-invariance.yaml"}
	fast := rehearseJSON(t, args...)
	capped := rehearseJSON(t, append(args, "--speed", "240")...)
	stop := harness.KeepCoresBusy(t)
	busy := rehearseJSON(t, args...)
	stop()
	for _, r := range []*report.Report{fast, capped, busy} {
		t.Logf("speed %g: %s of trace in %s of wall time, %d clock steps, %s settling (the longest %s), %d seen late", r.Speed, time.Duration(r.Rehearsed), time.Duration(r.Wall), r.Clock.Steps, time.Duration(r.Clock.Settling), time.Duration(r.Clock.MaxSettle), r.Clock.Late)
	}
	if diff := cmp.Diff(fast, capped, sameFigures); diff != "" {
		t.Errorf("the report at --speed 240 differs from the one as fast as the cluster settles (-fast +capped):\n%s", diff)
	}
	if diff := cmp.Diff(fast, busy, sameFigures); diff != "" {
		t.Errorf("the report with every core busy differs from the one on an idle machine (-idle +busy):\n%s", diff)
	}
	// The trace's parts happened: a test that compared empty reports
	// would prove nothing.
	if len(fast.Jobs) != 7 || len(fast.Services) != 1 || len(fast.Disruptions) != 1 {
		t.Fatalf("jobs %d, services %d, disruptions %d; want the trace's 7 (and reco, its service), 1 and 1", len(fast.Jobs), len(fast.Services), len(fast.Disruptions))
	}
	if d := fast.Disruptions[0]; d.Kind != report.KindInterruption || len(d.Nodes) == 0 {
		t.Errorf("the disruption %+v hit no node; want the spot-gpu pool's nodes interrupted", d)
	}
	for _, j := range fast.Jobs {
		if j.State != report.Completed {
			t.Errorf("job %s %s; want completed", j.Name, j.State)
		}
	}
	if j := jobNamed(t, fast, "train-b3"); time.Duration(j.QuotaRefused) < 25*time.Minute {
		t.Errorf("train-b3 was refused by team-b's quota for %s; want until one of the first two ended (30 minutes and more)", time.Duration(j.QuotaRefused))
	}
	if s := fast.Services[0]; s.PeakReplicas != 5 {
		t.Errorf("the service peaked at %d replicas; want 5, at 100 rps", s.PeakReplicas)
	}
}

// scaleUps is the order in which the report's autoscaled pools grew: a
// pool's name each time its nodes went up. The system pool's nodes, there
// before the clock starts, are no scale-up.
func scaleUps(r *report.Report) []string {
	type up struct {
		at   report.Duration
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

// TestRehearseRepeatable replays one trace twice with the same seed,
// whose spot interruptions are random: the two reports must be equal in
// every figure, not within a tolerance. Seed 15 interrupts the spot pool
// during long's run, past its checkpoint at 12 minutes: it loses the
// work since, and resumes on a new spot node once the autoscaler has
// one, while short holds the on-demand node.
func TestRehearseRepeatable(t *testing.T) {
	args := []string{"-f", "testdata/rehearse-repeat.yaml", "--trace", "testdata/rehearse-repeat.csv", "--seed", "15"}
	a := rehearseJSON(t, args...)
	b := rehearseJSON(t, args...)
	if diff := cmp.Diff(a, b, sameFigures); diff != "" {
		t.Errorf("two rehearsals with seed 15 differ (-first +second):\n%s", diff)
	}

	const p = 10 * time.Minute
	long, short := jobNamed(t, a, "long"), jobNamed(t, a, "short")
	if long.Interruptions != 1 || long.LostGPUHours <= 0 {
		t.Fatalf("long was interrupted %d times, losing %.4f GPU-hours; want once (seed 15), past its checkpoint", long.Interruptions, long.LostGPUHours)
	}
	exactly(t, a, "long's wait", waited(t, a, long), scan+p)
	exactly(t, a, "short's wait", waited(t, a, short), nextScan(time.Minute)+p-time.Minute)
	exactly(t, a, "short's run", ran(t, a, short), 50*time.Minute+jobDone)
	// long: interrupted at the checkpoint plus the work lost, its Job
	// sees the pod end a jobDone later, the next scan asks a spot node,
	// up P later; then the 50m − 12m left, and jobDone.
	started := scan + p
	lost := time.Duration(long.LostGPUHours * float64(time.Hour)).Round(time.Second)
	stopped := started + 12*time.Minute + lost
	restart := nextScan(stopped+jobDone) + p
	exactly(t, a, "long's run", ran(t, a, long), restart-started+38*time.Minute+jobDone)
	if got, want := scaleUps(a), []string{"spot-gpu", "gpu", "spot-gpu"}; !slices.Equal(got, want) {
		t.Errorf("pools grew in the order %v; want %v: spot first, as the priority expander prefers it, on-demand for short, spot again for long", got, want)
	}
}

// TestRehearseRetailWeekRepeats replays the first three hours of the
// retail week on the retail template twice with one seed and asks for
// the same report. The small traces above repeat on much less: here a
// team's quota refuses jobs whose retries come due together, the CPU
// pool grows and the autoscaler drains nodes, evicting batch pods, and
// which pod lands on which of several equal nodes decides which node can
// go. On 2026-11-28 three runs of four hours disagreed on 9 to 15 of 74
// jobs before the Job controller's queue, the autoscaler's view and the
// rehearsal's first nodes were given one order each.
func TestRehearseRetailWeekRepeats(t *testing.T) {
	bp := harness.Template(t, "retail")
	trace, err := filepath.Abs("../../../examples/retail-week.csv")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-f", bp, "--trace", trace, "--until", "3h", "--seed", "1"}
	a := rehearseJSON(t, args...)
	b := rehearseJSON(t, args...)
	if diff := cmp.Diff(a, b, sameFigures); diff != "" {
		t.Errorf("two rehearsals of the retail week's first 3 hours with seed 1 differ (-first +second):\n%s", diff)
	}
	// What makes the slice worth repeating is there.
	var refused, interrupted int
	for _, j := range a.Jobs {
		if j.QuotaRefused > 0 {
			refused++
		}
		if j.Interruptions > 0 {
			interrupted++
		}
	}
	if refused == 0 || interrupted == 0 {
		t.Errorf("of %d jobs, %d were refused by a quota and %d interrupted; want some of each", len(a.Jobs), refused, interrupted)
	}
}
