package simtime

import (
	"context"
	"maps"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Driver steps a Clock: each step waits until the cluster has settled,
// then advances the clock to the soonest pending deadline. A speed
// ceiling keeps the clock from running ahead of wall time times the
// speed, so that a person can watch a rehearsal live.
//
// Settled means, at every look for a quiet window and with no sign of
// life in between: no counter of the clock's Activity has work in flight,
// no probe is busy, and the Go runtime has no goroutine runnable and none
// running but the Driver's own. The window covers what none of these
// sees: a write on a loopback socket between one goroutine's send and
// another's wake-up, which waits for the machine to run a thread. It
// adapts to the machine: twice the latest oversleep of the Driver's own
// millisecond naps (a busy machine wakes sleepers late), never below
// MinQuiet. After a request refused in a way its client retries on the
// wall clock, the clock also waits out RetryGrace.
type Driver struct {
	clock *Clock
	// Speed is the ceiling: at most Speed seconds of clock time per
	// second of wall time. Zero runs as fast as the cluster settles.
	Speed float64
	// MinQuiet is the least quiet window. Zero means 2 ms.
	MinQuiet time.Duration
	// RetryGrace is how long the clock stands still after a request was
	// refused in a way its client retries on the wall clock (a conflict,
	// a refusal by quota, a server error): the first retries of the
	// backoffs upstream clients use (client-go's workqueues from 5 ms,
	// RetryOnConflict 10 ms, the node controllers' taint updates 100 to
	// 200 ms) come within it. Zero means 300 ms.
	RetryGrace time.Duration

	rt *runtimeState

	// mu guards the statistics below.
	mu    sync.Mutex
	stats Stats
	// quiet is the window now in use.
	quiet time.Duration
	// notInGo is the fewest goroutines seen in system calls: those that
	// wait in one for good (a signal watcher) and are no work.
	notInGo uint64
	// waiting names what the current settle waits on, once it has waited
	// long.
	waiting string
	// quietAt is the count of writes when the cluster was last seen
	// quiet for a window: watch events of writes before it have arrived.
	quietAt uint64
	// moment is the causes whose timers fired at the clock's current
	// moment; settling the causes of the timers fired last, whose share
	// of the next settle they get.
	moment, settling map[string]int
}

// Stats are what a Driver did.
type Stats struct {
	// Steps counts the clock's advances; Fired the timers they fired.
	Steps int `json:"steps"`
	Fired int `json:"fired"`
	// Settling is the wall time spent waiting for the cluster to settle,
	// MaxSettle the longest single wait.
	Settling  time.Duration `json:"settling"`
	MaxSettle time.Duration `json:"maxSettle"`
	// Quiet is the largest quiet window the Driver used.
	Quiet time.Duration `json:"quiet"`
	// Where the settling went: waiting for counted work (requests,
	// callbacks, probes) to end, for the Go runtime's goroutines to stop,
	// out a refusal's retry grace, and in quiet windows.
	Counted time.Duration `json:"counted"`
	Running time.Duration `json:"running"`
	Grace   time.Duration `json:"grace"`
	Windows time.Duration `json:"windows"`
	// Gated counts the pieces of work gates let through (the scheduler's
	// pods).
	Gated int `json:"gated"`
	// WaitedOn is the counted settling by what was at work: a request
	// counter's name, a probe's, a watch's.
	WaitedOn map[string]time.Duration `json:"waitedOn,omitempty"`
	// Causes are the clock's moments and the settling after them by the
	// component whose timers fired (see Cause).
	Causes map[string]Cause `json:"causes,omitempty"`

	lastSettle time.Duration
}

// NewDriver returns a Driver of c, not yet running.
func NewDriver(c *Clock) *Driver {
	return &Driver{clock: c, rt: newRuntimeState(), notInGo: ^uint64(0)}
}

// Stats are the Driver's statistics so far.
func (d *Driver) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.WaitedOn = maps.Clone(d.stats.WaitedOn)
	s.Causes = maps.Clone(d.stats.Causes)
	d.countMoment(&s)
	return s
}

// Waiting names what the Driver has waited on for more than a few
// seconds of wall time, or "" when it has not.
func (d *Driver) Waiting() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waiting
}

// Run steps the clock until ctx ends. While it runs, the clock's gates
// hold their components' work for it.
func (d *Driver) Run(ctx context.Context) error {
	d.clock.activity.holdGates(true)
	defer d.clock.activity.holdGates(false)
	wallStart, clockStart := time.Now(), d.clock.Now()
	for {
		if err := d.Settle(ctx); err != nil {
			return err
		}
		// The moment's timers of the next phase, once the earlier
		// phases have settled.
		if d.clock.Due() {
			n, causes := d.clock.fireDue()
			d.noteFired(false, n, causes)
			continue
		}
		next, ok := d.clock.Next()
		if !ok {
			// Nothing is due: wait for a timer to be set.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-d.clock.Changed():
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if d.Speed > 0 {
			due := wallStart.Add(time.Duration(float64(next.Sub(clockStart)) / d.Speed))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-d.clock.Changed():
				case <-time.After(min(wait, 100*time.Millisecond)):
				}
				continue
			}
		}
		if traceTimers {
			Tracef("settled in %s (quiet window %s)", d.Stats().lastSettle, d.window())
		}
		n, causes := d.clock.advance(next)
		d.noteFired(true, n, causes)
	}
}

// noteFired notes the n timers just fired, by cause; step says they
// began a new moment of the clock.
func (d *Driver) noteFired(step bool, n int, causes map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Fired += n
	if step {
		d.stats.Steps++
		d.countMoment(&d.stats)
		d.moment = nil
	}
	if d.stats.Causes == nil {
		d.stats.Causes = map[string]Cause{}
	}
	if d.moment == nil {
		d.moment = map[string]int{}
	}
	for name, k := range causes {
		c := d.stats.Causes[name]
		c.Timers += k
		d.stats.Causes[name] = c
		d.moment[name] += k
	}
	d.settling = causes
}

// countMoment adds the moment now ending (or, for a snapshot of the
// statistics, going on) to s's causes. d.mu is held.
func (d *Driver) countMoment(s *Stats) {
	for name := range d.moment {
		c := s.Causes[name]
		c.Moments++
		if len(d.moment) == 1 {
			c.Alone++
		}
		s.Causes[name] = c
	}
}

// Settle returns once the cluster has settled, or when ctx ends.
func (d *Driver) Settle(ctx context.Context) error {
	begin := time.Now()
	defer func() {
		took := time.Since(begin)
		d.mu.Lock()
		d.stats.Settling += took
		d.stats.MaxSettle = max(d.stats.MaxSettle, took)
		d.stats.lastSettle = took
		d.waiting = ""
		if len(d.settling) > 0 {
			share := took / time.Duration(len(d.settling))
			for name := range d.settling {
				c := d.stats.Causes[name]
				c.Settling += share
				d.stats.Causes[name] = c
			}
			d.settling = nil
		}
		d.mu.Unlock()
	}()
	a := d.clock.activity
	mark := time.Now()
	spent := func(on *time.Duration) {
		now := time.Now()
		d.mu.Lock()
		*on += now.Sub(mark)
		d.mu.Unlock()
		mark = now
	}
	for look := 0; ; look++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Since(begin) > 5*time.Second {
			d.noteWaiting()
		}
		life := a.Life()
		busy := a.Busy()
		counted := busy != ""
		if counted || !d.runtimeIdle() {
			// Most steps wake a few goroutines that run for
			// microseconds: yield to them a while before sleeping.
			if look < 50 {
				runtime.Gosched()
			} else {
				d.nap()
			}
			if counted {
				before := d.Stats().Counted
				spent(&d.stats.Counted)
				d.mu.Lock()
				if d.stats.WaitedOn == nil {
					d.stats.WaitedOn = map[string]time.Duration{}
				}
				d.stats.WaitedOn[kind(busy)] += d.stats.Counted - before
				d.mu.Unlock()
			} else {
				spent(&d.stats.Running)
			}
			continue
		}
		if wait := d.retryGrace() - a.sinceRefusal(); wait > 0 {
			time.Sleep(min(wait, 10*time.Millisecond))
			spent(&d.stats.Grace)
			continue
		}
		// No write since the cluster was last quiet for a window: every
		// request is counted from when its client sends it to when its
		// response arrives, and only a write sends watch events that
		// could still be on their way. Otherwise: quiet still a window
		// later, with nothing begun or ended in between?
		writes := a.mutations.Load()
		if writes != d.quietAt {
			quiet := d.quietFor(d.window(), life)
			spent(&d.stats.Windows)
			if !quiet {
				continue
			}
			d.quietAt = writes
		}
		// The rest has settled: a gated component takes its next piece
		// of work, and the cluster settles again from it.
		opened, busy := a.openGate()
		if opened {
			d.mu.Lock()
			d.stats.Gated++
			d.mu.Unlock()
			continue
		}
		if busy != "" {
			d.nap()
			spent(&d.stats.Counted)
			continue
		}
		return nil
	}
}

// quietFor watches the activity and the runtime for w, and reports
// whether they stayed quiet all along.
func (d *Driver) quietFor(w time.Duration, life uint64) bool {
	a := d.clock.activity
	end := time.Now().Add(w)
	for time.Now().Before(end) {
		d.nap()
		if a.Life() != life || a.Busy() != "" || !d.runtimeIdle() {
			return false
		}
	}
	return a.Life() == life && a.Busy() == "" && d.runtimeIdle()
}

// napLength is how long the Driver sleeps between looks at the cluster:
// a millisecond, the finest a sleep resolves on Linux.
const napLength = time.Millisecond

// nap sleeps a millisecond and learns from how late it woke how busy the
// machine is.
func (d *Driver) nap() {
	begin := time.Now()
	time.Sleep(napLength)
	over := time.Since(begin) - napLength
	d.mu.Lock()
	defer d.mu.Unlock()
	// The window follows the machine: up at once when a nap wakes late,
	// down slowly (a sixteenth of the way per nap) when it no longer
	// does.
	want := max(d.minQuiet(), min(2*over, time.Second))
	if want > d.quiet {
		d.quiet = want
	} else {
		d.quiet -= (d.quiet - want) / 16
	}
	d.stats.Quiet = max(d.stats.Quiet, d.quiet)
}

func (d *Driver) minQuiet() time.Duration {
	if d.MinQuiet <= 0 {
		return 2 * time.Millisecond
	}
	return d.MinQuiet
}

func (d *Driver) retryGrace() time.Duration {
	if d.RetryGrace <= 0 {
		return 300 * time.Millisecond
	}
	return d.RetryGrace
}

func (d *Driver) window() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.quiet <= 0 {
		d.quiet = d.minQuiet()
	}
	return d.quiet
}

// runtimeIdle reports whether the Go runtime has no goroutine running
// but the caller and none waiting to run, and no more in system calls
// than ever wait in one.
func (d *Driver) runtimeIdle() bool {
	running, runnable, notInGo := d.rt.read()
	d.mu.Lock()
	d.notInGo = min(d.notInGo, notInGo)
	base := d.notInGo
	d.mu.Unlock()
	return running <= 1 && runnable == 0 && notInGo <= base
}

// noteWaiting records what a long settle waits on.
func (d *Driver) noteWaiting() {
	what := d.clock.activity.describe()
	if what == "" {
		running, runnable, notInGo := d.rt.read()
		if running > 1 || runnable > 0 {
			what = "goroutines at work (running or runnable)"
		} else if notInGo > 0 {
			what = "goroutines in system calls"
		}
	}
	d.mu.Lock()
	d.waiting = what
	d.mu.Unlock()
}

// kind is what a Busy answer names, without its count: "requests sent
// by kube-scheduler (2)" is "requests sent by kube-scheduler".
func kind(busy string) string {
	if i := strings.LastIndex(busy, " ("); i > 0 && strings.HasSuffix(busy, ")") {
		return busy[:i]
	}
	return busy
}
