package trace

import (
	"math/rand/v2"
	"slices"
	"time"
)

// Jittered is a copy of t whose jobs are each submitted at a uniform
// random shift within ±d of their Submit, to the whole second (the
// rehearsal clock's step) and never before the trace's start, drawn from
// seed: the same seed shifts the same rows by the same amounts, another
// seed by others. Rows shifted to the same second keep their written
// order. The load, interruptions and drains keep their times. A d under
// a second is no jitter: t itself.
func (t *Trace) Jittered(d time.Duration, seed int64) *Trace {
	steps := int64(d / time.Second)
	if steps <= 0 {
		return t
	}
	// The seed's stream of shifts, apart from the other draws the seed
	// makes (interruptions, the expander's ties): PCG keyed by the seed
	// and a constant of jitter's own.
	r := rand.New(rand.NewPCG(uint64(seed), 0x6a6974746572)) // "jitter"
	out := *t
	out.Jobs = slices.Clone(t.Jobs)
	for i := range out.Jobs {
		shift := time.Duration(r.Int64N(2*steps+1)-steps) * time.Second
		out.Jobs[i].Submit = max(0, out.Jobs[i].Submit+shift)
	}
	sortJobs(out.Jobs)
	return &out
}
