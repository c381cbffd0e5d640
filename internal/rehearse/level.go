package rehearse

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// level is a quantity that steps over wall time (nodes in a pool, GPUs
// allocated, ready replicas), integrated as it goes: the area under it
// is node-seconds, GPU-seconds, replica-seconds.
type level struct {
	since time.Time
	v     float64
	// area is the integral of v over wall time so far, in value-seconds.
	area float64
	// zero is the wall time v has been 0 (counted once started).
	zero    time.Duration
	started bool
	peak    float64
	// points, when keep is set, are the level's steps in wall time, for
	// the report's charts.
	keep   bool
	points []wallPoint
}

type wallPoint struct {
	at time.Time
	v  float64
}

// set makes the level v from now on.
func (l *level) set(now time.Time, v float64) {
	l.advance(now)
	if l.keep && (len(l.points) == 0 || l.points[len(l.points)-1].v != v) {
		l.points = append(l.points, wallPoint{now, v})
	}
	l.v = v
	l.peak = max(l.peak, v)
}

// add changes the level by dv from now on.
func (l *level) add(now time.Time, dv float64) { l.set(now, l.v+dv) }

// advance integrates the level up to now.
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
		l.since = now
	}
}

// at reads the level integrated up to now, without changing it.
func (l level) at(now time.Time) level {
	l.advance(now)
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
