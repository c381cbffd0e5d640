package rehearse

import (
	"time"

	"k8s.io/utils/clock"
)

// timeline reads trace time off the cluster's clock: offset 0 is start,
// the clock's time when the replay began. The clock is the rehearsal's
// virtual clock, so a moment read off it is the moment the cluster
// reached, whatever the machine took to get there.
type timeline struct {
	clock clock.PassiveClock
	start time.Time
}

// now is the clock's time.
func (t timeline) now() time.Time { return t.clock.Now() }

// trace is the trace time of a moment of the clock: its offset from the
// start.
func (t timeline) trace(at time.Time) time.Duration { return at.Sub(t.start) }

// at is the moment of the clock at which the trace reaches offset d.
func (t timeline) at(d time.Duration) time.Time { return t.start.Add(d) }
