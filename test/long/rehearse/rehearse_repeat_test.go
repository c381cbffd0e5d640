//go:build long

package rehearse_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/test/harness"
)

// replications runs berth rehearse -o json with args (a --repeat) and
// reads its document. It logs berth's whole progress only when berth
// fails; otherwise each replication's summary and any warning, so that
// a failure's own lines stay within what CI shows of a long log.
func replications[T any](t *testing.T, args ...string) T {
	t.Helper()
	out, errOut, code := harness.BerthOut(t, t.TempDir(), append([]string{"rehearse", "-o", "json"}, args...)...)
	var doc T
	if code != 0 {
		t.Fatalf("berth rehearse %v: exit %d\n%s\n%s", args, code, errOut, out)
	}
	t.Logf("berth rehearse %v:\n%s", args, summaryLines(errOut))
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("reading the replications: %v\n%s", err, out)
	}
	return doc
}

// summaryLines keeps, of a rehearsal's progress, the lines that say how
// each replication ended and what it warned of.
func summaryLines(progress string) string {
	var keep []string
	for line := range strings.Lines(progress) {
		_, rest, _ := strings.Cut(line, "] ")
		if strings.HasPrefix(rest, "Replayed ") || strings.HasPrefix(rest, "Bound by") || strings.Contains(line, "Warning") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}

type spreadDoc struct {
	Replications []*report.Report `json:"replications"`
	Spreads      []report.Spread  `json:"spreads"`
}

type pairedDoc struct {
	A, B       []*report.Report
	Comparison []report.Paired `json:"comparison"`
}

// TestRehearseRepeat replays the invariance trace three times on seeds
// 1 to 3 with its rows jittered by up to 5 minutes, two at a time, then
// the same three one after another: the replications differ (the seed
// moves the rows), each figure's median and range are the hand
// computation from the three reports, and the replications run at once,
// each in its own process, are the ones run in turn.
func TestRehearseRepeat(t *testing.T) {
	args := []string{"-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-invariance.yaml", "--repeat", "3", "--jitter", "5m"}
	parallel := replications[spreadDoc](t, append(args, "--parallel", "2")...)
	serial := replications[spreadDoc](t, append(args, "--parallel", "1")...)
	if len(parallel.Replications) != 3 {
		t.Fatalf("%d replications; want 3", len(parallel.Replications))
	}
	for i, r := range parallel.Replications {
		if r.Seed != int64(i+1) {
			t.Errorf("replication %d ran on seed %d; want %d", i+1, r.Seed, i+1)
		}
		if diff := cmp.Diff(r, serial.Replications[i], sameFigures); diff != "" {
			t.Errorf("seed %d run beside another differs from the same seed run alone (-beside +alone):\n%s", r.Seed, diff)
		}
	}
	a, b, c := parallel.Replications[0], parallel.Replications[1], parallel.Replications[2]
	if cmp.Equal(a, b, sameFigures) || cmp.Equal(b, c, sameFigures) || cmp.Equal(a, c, sameFigures) {
		t.Error("two replications on different seeds gave the same report; want the jitter to move them apart")
	}
	for _, s := range parallel.Spreads {
		var v []float64
		for _, r := range parallel.Replications {
			for _, f := range report.Figures(r) {
				if f.Name == s.Name {
					v = append(v, f.Value)
				}
			}
		}
		sorted := slices.Sorted(slices.Values(v))
		var med float64
		if len(sorted)%2 == 1 {
			med = sorted[len(sorted)/2]
		} else {
			med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
		}
		if s.N != len(v) || s.Median != med || s.Min != sorted[0] || s.Max != sorted[len(sorted)-1] {
			t.Errorf("%s: median %g, range %g–%g over %d; want %g, %g–%g over %d (from %v)", s.Name, s.Median, s.Min, s.Max, s.N, med, sorted[0], sorted[len(sorted)-1], len(v), v)
		}
	}
	waits := func(r *report.Report) time.Duration {
		for _, g := range r.Groups {
			if g.Team == "team-a" && g.Class == "training" {
				return time.Duration(g.WaitMax)
			}
		}
		return -1
	}
	t.Logf("team-a's training waited at most %s, %s and %s", waits(a), waits(b), waits(c))
}

// TestRehearseRepeatVerdicts compares, on seeds 1 to 3, the invariance
// trace's blueprint with itself under a label berth copies onto nothing
// (no figure may show a difference: every pair is equal), and with its
// spot GPU pool kept at four warm nodes (team-a's training then never
// waits the ten minutes a node takes: B better, on every seed; and the
// whole trace ends those minutes sooner, so every pool runs less and the
// warm nodes' idle start costs less than that: B better on cost too).
// Read the other way round, the verdicts turn.
func TestRehearseRepeatVerdicts(t *testing.T) {
	base := []string{"-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-invariance.yaml", "--repeat", "3"}
	same := replications[pairedDoc](t, append(base, "--vs", "testdata/rehearse-retail-labelled.yaml")...)
	if len(same.Comparison) == 0 {
		t.Fatal("the comparison has no figures")
	}
	for _, c := range same.Comparison {
		if c.Verdict != report.NoDifference || slices.ContainsFunc(c.Diffs, func(d float64) bool { return d != 0 }) {
			t.Errorf("%s: %q, differences %v; want no difference on any seed between designs that differ in a label", c.Name, c.Verdict, c.Diffs)
		}
	}
	if t.Failed() {
		// Which decision parted them: each seed's two reports, figure by
		// figure (the design's own name aside).
		for i := range min(len(same.A), len(same.B)) {
			if diff := cmp.Diff(same.A[i], same.B[i], sameFigures, cmpopts.IgnoreFields(report.Report{}, "Blueprint")); diff != "" {
				t.Logf("seed %d, the two designs' reports (-A +B):\n%s", same.A[i].Seed, diff)
			}
		}
	}

	warm := replications[pairedDoc](t, append(base, "--vs", "testdata/rehearse-retail-warm.yaml")...)
	verdict := func(rows []report.Paired, name string) report.Verdict {
		for _, c := range rows {
			if c.Name == name {
				t.Logf("%s: A %g, B %g, B - A %g (%g to %g): %s", c.Name, c.A, c.B, c.Diff, c.Low, c.High, c.Verdict)
				return c.Verdict
			}
		}
		t.Fatalf("no figure %q in the comparison", name)
		return ""
	}
	if got := verdict(warm.Comparison, "team-a/training wait p50"); got != report.BBetter {
		t.Errorf("team-a's training wait with warm spot nodes: %q; want %q", got, report.BBetter)
	}
	if got := verdict(warm.Comparison, "cost, total"); got != report.BBetter {
		t.Errorf("the cost with four warm spot nodes: %q; want %q", got, report.BBetter)
	}
	swapped, err := report.Compare(warm.B, warm.A)
	if err != nil {
		t.Fatal(err)
	}
	if got := verdict(swapped, "team-a/training wait p50"); got != report.BWorse {
		t.Errorf("read the other way round, the training wait: %q; want %q", got, report.BWorse)
	}
}
