package simtime

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Sequenced is the clock for a component that orders what it does by
// when it did it, as the scheduler's queue orders pods of the same
// priority by when each was last queued. On a virtual clock everything
// in one step happens at the same moment, and those ties would be broken
// by the order of a map's iteration or a heap's; Sequenced's Now adds a
// nanosecond per reading within a step, so that its readings keep the
// order in which they were made. Its timers are the clock's.
func (c *Clock) Sequenced() clock.WithTicker {
	return &sequenced{Clock: c}
}

type sequenced struct {
	*Clock
	mu   sync.Mutex
	base time.Time
	n    time.Duration
}

func (s *sequenced) Now() time.Time {
	now := s.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !now.Equal(s.base) {
		s.base, s.n = now, 0
	}
	s.n++
	return now.Add(s.n)
}

func (s *sequenced) Since(t time.Time) time.Duration { return s.Now().Sub(t) }
