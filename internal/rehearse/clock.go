package rehearse

import "time"

// Clock maps wall time to trace time: at Speed N, a second of wall time
// is N seconds of the trace, counted from Start.
type Clock struct {
	// Start is the wall time the trace's offset 0 is replayed at.
	Start time.Time
	// Speed is how many seconds of the trace pass per second of wall
	// time. Always at least 1.
	Speed float64
}

// Trace is the trace time of a wall time: its offset from the trace's
// start. A wall time before Start gives a negative offset.
func (c Clock) Trace(wall time.Time) time.Duration {
	return time.Duration(float64(wall.Sub(c.Start)) * c.Speed)
}

// Wall is the wall time at which the trace reaches offset d.
func (c Clock) Wall(d time.Duration) time.Time {
	return c.Start.Add(c.Scale(d))
}

// Scale is how long d of trace time lasts in wall time.
func (c Clock) Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.Speed)
}
