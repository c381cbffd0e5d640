package rehearse

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// level is a quantity that steps over the clock's time (nodes in a pool,
// GPUs allocated, ready replicas), integrated as it goes: the area under
// it is node-seconds, GPU-seconds, replica-seconds. The clock stands
// still while the cluster works, so a level may change several times at
// one moment, in whatever order the machine ran its parts: only the
// value it holds when the clock moves on counts (for its peak and its
// points), never one it passed through within the moment.
type level struct {
	since time.Time
	v     float64
	// area is the integral of v over time so far, in value-seconds.
	area float64
	// zero is the time v has been 0 (counted once started).
	zero    time.Duration
	started bool
	peak    float64
	// points, when keep is set, are the level's steps, for the report's
	// charts.
	keep   bool
	points []timePoint
}

type timePoint struct {
	at time.Time
	v  float64
}

// set makes the level v from now on.
func (l *level) set(now time.Time, v float64) {
	l.advance(now)
	if l.keep {
		n := len(l.points)
		switch {
		case n > 0 && l.points[n-1].at.Equal(now):
			// A change within the moment replaces the moment's value.
			l.points[n-1].v = v
			if n > 1 && l.points[n-2].v == v {
				l.points = l.points[:n-1]
			}
		case n == 0 || l.points[n-1].v != v:
			l.points = append(l.points, timePoint{now, v})
		}
	}
	l.v = v
}

// add changes the level by dv from now on.
func (l *level) add(now time.Time, dv float64) { l.set(now, l.v+dv) }

// advance integrates the level up to now; the value it held since the
// last moment counts towards its peak once the clock has moved on.
func (l *level) advance(now time.Time) {
	if !l.started {
		l.since, l.started = now, true
		return
	}
	if d := now.Sub(l.since); d > 0 {
		l.area += l.v * d.Seconds()
		if l.v == 0 {
			l.zero += d
		}
		l.peak = max(l.peak, l.v)
		l.since = now
	}
}

// at reads the level integrated up to now, without changing it; its
// value now counts towards its peak.
func (l level) at(now time.Time) level {
	l.advance(now)
	l.peak = max(l.peak, l.v)
	return l
}

// resourceCount reads a count label such as nvidia.com/gpu.count.
func resourceCount(s string) (float64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	return float64(q.Value()), nil
}
