//go:build long

package kueue_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/test/harness"
)

// TestRehearseKueueRetailWeekRepeats replays the first three hours of
// the retail week on the retail template queued by Kueue, twice with one
// seed, and asks for the same report in every figure. What parted such
// replays is there: Jobs submitted in the trace's first second, whose
// Workloads Kueue made 0, 1 or 10 seconds later by how far its Job
// reconciler had started (its first read of PriorityClasses and of Jobs'
// metadata starts an informer, on the wall clock, until those reads
// counted as work on the rehearsal's clock); and Jobs of one team and
// class submitted in the same second that wait in their ClusterQueue
// together, whose order Kueue breaks by UID (random, until the API
// server took a rehearsal's UIDs from the objects' keys).
func TestRehearseKueueRetailWeekRepeats(t *testing.T) {
	bp := harness.Template(t, "retail")
	trace, err := filepath.Abs("../../../examples/retail-week.csv")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-f", bp, "--trace", trace, "--queueing", "Kueue", "--until", "3h", "--seed", "1"}
	a := harness.Rehearse(t, args...)
	b := harness.Rehearse(t, args...)
	if diff := cmp.Diff(a, b, cmpopts.IgnoreFields(report.Report{}, "Speed", "Wall", "Clock")); diff != "" {
		t.Errorf("two rehearsals of the retail week's first 3 hours under Kueue with seed 1 differ (-first +second):\n%s", diff)
	}
	if a.Queueing != "Kueue" {
		t.Fatalf("the report's queueing is %q; want Kueue", a.Queueing)
	}
	// What could part them is there: Jobs submitted at 0s, and Jobs of
	// one team and class submitted in the same second.
	type key struct {
		team, class string
		at          report.Duration
	}
	together := map[key]int{}
	first := 0
	for _, j := range a.Jobs {
		together[key{j.Team, j.Class, j.Submitted}]++
		if j.Submitted == 0 {
			first++
		}
	}
	ties := 0
	for _, n := range together {
		if n > 1 {
			ties++
		}
	}
	if first == 0 || ties == 0 {
		t.Errorf("of %d jobs, %d were submitted at 0s and %d groups of a team and class in one second: the slice no longer has what it is here for", len(a.Jobs), first, ties)
	}
}
