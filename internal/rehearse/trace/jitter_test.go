package trace

import (
	"slices"
	"testing"
	"time"
)

func TestJitterShiftsEachRowWithinItsBoundBySeed(t *testing.T) {
	var jobs []Job
	for i := range 200 {
		jobs = append(jobs, Job{Name: string(rune('a' + i%26)), Submit: time.Duration(i) * time.Minute})
	}
	tr := &Trace{Jobs: jobs}
	a, again, other := tr.Jittered(30*time.Second, 7), tr.Jittered(30*time.Second, 7), tr.Jittered(30*time.Second, 8)
	if !slices.Equal(a.Jobs, again.Jobs) {
		t.Error("two jitters on seed 7 differ; want the same shifts")
	}
	if slices.Equal(a.Jobs, other.Jobs) {
		t.Error("the jitters on seeds 7 and 8 are the same; want other shifts")
	}
	moved := 0
	for i, j := range a.Jobs {
		if j.Submit%time.Second != 0 || j.Submit < 0 {
			t.Errorf("row %d submitted at %s; want a whole second, not before the start", i, j.Submit)
		}
		if i > 0 && j.Submit < a.Jobs[i-1].Submit {
			t.Errorf("row %d at %s before row %d at %s; want them in submit order", i, j.Submit, i-1, a.Jobs[i-1].Submit)
		}
		if j.Submit%time.Minute != 0 {
			moved++
		}
	}
	// Rows a minute apart shifted by at most 30 s keep their order (two
	// that meet keep the written one): row i is within 30 s of minute i.
	for i, j := range a.Jobs {
		if want := time.Duration(i) * time.Minute; (j.Submit - want).Abs() > 30*time.Second {
			t.Errorf("row %d at %s; want within 30 s of %s", i, j.Submit, want)
		}
	}
	if moved < 150 {
		t.Errorf("%d of 200 rows moved; want nearly all (a shift of 0 is 1 in 61)", moved)
	}
	if tr.Jittered(0, 7) != tr || tr.Jobs[5].Submit != 5*time.Minute {
		t.Error("no jitter changed the trace; want it unchanged")
	}
}
