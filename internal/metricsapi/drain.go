package metricsapi

import (
	"time"
)

// drain is where one queue's draining stands: its depth and the work
// done on its next item as of a moment, and the workers taking items
// since then.
type drain struct {
	// at is the wall-clock time depth and carry are as of.
	at    time.Time
	depth int64
	// carry is the worker time spent on items not yet finished, summed
	// over the workers (in profile time under a playback). Whole items
	// come off the depth; the rest carries over, so no rounding drifts.
	carry time.Duration
	// workers are the Ready pods taking items since at.
	workers int
	// itemTime is how long one worker takes over one item.
	itemTime time.Duration
}

// take is depth after workers have worked for elapsed, each taking
// itemTime over an item, with carry the work already done on unfinished
// items; and the work carried on. The depth never goes below zero, and an
// empty queue carries nothing: a worker waiting for items banks no time.
func take(depth int64, workers int, elapsed, itemTime, carry time.Duration) (int64, time.Duration) {
	if depth <= 0 {
		return 0, 0
	}
	if workers <= 0 || elapsed <= 0 || itemTime <= 0 {
		return depth, carry
	}
	// Whole items of each worker first, so that a long elapsed time
	// times many workers cannot overflow.
	n := int64(workers)
	items := n * int64(elapsed/itemTime)
	work := carry + time.Duration(n)*(elapsed%itemTime)
	items += int64(work / itemTime)
	if items >= depth {
		return 0, 0
	}
	return depth - items, work % itemTime
}

// advance drains d from d.at to now with d.workers, under the playback p
// (nil when none): profile time passes at its speed, and a step that sets
// the queue's depth on the way sets it anew, the work on the old items
// dropped. The queue is named q.
func (d *drain) advance(q string, p *Playback, now time.Time) {
	if !now.After(d.at) {
		return
	}
	if p != nil && p.Speed > 0 {
		from, to := p.Elapsed(d.at), p.Elapsed(now)
		for _, s := range p.Profile.Steps {
			depth, ok := s.Queues[q]
			if !ok || s.At.Duration <= from {
				continue
			}
			if s.At.Duration > to {
				break
			}
			d.depth, d.carry = take(d.depth, d.workers, s.At.Duration-from, d.itemTime, d.carry)
			d.depth, d.carry, from = depth, 0, s.At.Duration
		}
		d.depth, d.carry = take(d.depth, d.workers, to-from, d.itemTime, d.carry)
	} else {
		d.depth, d.carry = take(d.depth, d.workers, now.Sub(d.at), d.itemTime, d.carry)
	}
	d.at = now
}

// next is how long from d.at until d's workers finish their next item,
// in wall-clock time under the playback p (nil when none); zero when
// they never do (no workers, or nothing waiting).
func (d *drain) next(p *Playback) time.Duration {
	if d.depth <= 0 || d.workers <= 0 || d.itemTime <= 0 {
		return 0
	}
	n := time.Duration(d.workers)
	left := (d.itemTime - d.carry%d.itemTime + n - 1) / n
	if p != nil && p.Speed > 0 {
		left = time.Duration(float64(left) / p.Speed)
	}
	return max(left, time.Millisecond)
}

// fold is l with the queues' depths at now, those of depths written over
// them, and the profile's steps reached by now marked folded in.
func (l *Load) fold(now time.Time, depths map[string]int64) *Load {
	out := *l
	out.Queues = l.At(now).Queues
	for q, d := range depths {
		out.Queues[q] = d
	}
	if p := l.Playback; p != nil {
		folded := *p
		folded.Folded = p.reached(now)
		out.Playback = &folded
	}
	return &out
}
