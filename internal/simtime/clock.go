package simtime

import (
	"container/heap"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultStep is the resolution of a rehearsal's clock: the API's
// timestamps (a pod's startTime, a condition's lastTransitionTime) have
// whole seconds, so a rehearsal's moments do too.
const DefaultStep = time.Second

// Clock is a virtual clock. Now stands still until Advance moves it;
// a one-shot timer (After, NewTimer, AfterFunc, Sleep) fires when the
// clock reaches its deadline, and is where a Driver stops it next. A
// ticker is a poll: it ticks once whenever the clock passes one or more
// of its periods, and never holds the clock.
//
// Deadlines round up to a multiple of Step, so that a clock started on a
// whole second stays on whole seconds. A timer due now or earlier fires
// at once.
//
// Many timers fall due at the same moment (a scan of the node autoscaler
// and a row of the trace, at a whole minute), and what each does must not
// depend on which the machine ran first. Timers set through Phase(n) fire
// after those of lower phases due at the same moment, once the cluster
// has settled from them: the components that look at the cluster
// periodically (the HPA controller's syncs, then the node autoscaler's
// scans) take their timers from later phases, so that they see the
// moment's changes, every time.
type Clock struct {
	step     time.Duration
	activity *Activity

	// mu guards everything below.
	mu  sync.Mutex
	now time.Time
	// timerSeq orders timers with the same deadline by their creation.
	timerSeq uint64
	timers   timerHeap
	tickers  map[*ticker]struct{}
	// changed is signalled (without blocking) when the soonest deadline
	// may have changed, for a Driver waiting on it.
	changed chan struct{}
}

var _ clock.WithTickerAndDelayedExecution = (*Clock)(nil)

// NewClock returns a clock standing at start, truncated to step, whose
// deadlines round up to step (zero: DefaultStep). Its Activity counts
// its AfterFunc callbacks while they run.
func NewClock(start time.Time, step time.Duration) *Clock {
	if step <= 0 {
		step = DefaultStep
	}
	return &Clock{
		step:     step,
		activity: NewActivity(),
		now:      start.Truncate(step),
		tickers:  map[*ticker]struct{}{},
		changed:  make(chan struct{}, 1),
	}
}

// Step is the clock's resolution: every deadline is a multiple of it.
func (c *Clock) Step() time.Duration { return c.step }

// Activity is what tells the clock's Driver that the cluster is at work.
func (c *Clock) Activity() *Activity { return c.activity }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since is how long ago t was on the clock.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until is how long until t on the clock.
func (c *Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// After returns a channel that receives the clock's time once it reaches
// now+d.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

// Sleep blocks until the clock reaches now+d.
func (c *Clock) Sleep(d time.Duration) { <-c.After(d) }

// NewTimer returns a timer whose channel receives the clock's time once
// it reaches now+d.
func (c *Clock) NewTimer(d time.Duration) clock.Timer { return c.newTimer(d, nil, 0) }

// AfterFunc calls f in its own goroutine once the clock reaches now+d.
// The clock's Activity counts f as work until it returns.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer { return c.newTimer(d, f, 0) }

func (c *Clock) newTimer(d time.Duration, f func(), phase int) clock.Timer {
	return c.newTimerOf("", d, f, phase)
}

// newTimerOf is newTimer for a timer of the named cause; "" is the
// caller's component (timerCause).
func (c *Clock) newTimerOf(cause string, d time.Duration, f func(), phase int) clock.Timer {
	t := &timer{c: c, f: f, phase: phase, index: -1, cause: cause}
	if f == nil {
		t.ch = make(chan time.Time, 1)
	}
	c.arm(t, d)
	return t
}

// Virtual is a rehearsal's clock, or a phase of it: a component that
// keeps time differently on one (the node autoscaler) asks for it.
type Virtual interface {
	clock.WithTickerAndDelayedExecution
	Activity() *Activity
}

var _ Virtual = phaseClock{}

// Phase is the clock with timers that fire after those of every lower
// phase due at the same moment, once the cluster has settled from them.
// The clock's own timers are phase 0.
func (c *Clock) Phase(n int) Virtual { return phaseClock{c, n} }

type phaseClock struct {
	*Clock
	phase int
}

func (p phaseClock) After(d time.Duration) <-chan time.Time { return p.NewTimer(d).C() }
func (p phaseClock) Sleep(d time.Duration)                  { <-p.After(d) }
func (p phaseClock) NewTimer(d time.Duration) clock.Timer   { return p.newTimer(d, nil, p.phase) }
func (p phaseClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return p.newTimer(d, f, p.phase)
}
func (p phaseClock) NewTicker(d time.Duration) clock.Ticker { return p.newTicker(d, p.phase) }
func (p phaseClock) Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	return p.NewTicker(d).C()
}

// Tick returns the channel of a ticker that is never stopped.
func (c *Clock) Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	return c.NewTicker(d).C()
}

// NewTicker returns a ticker that ticks every d of clock time: once per
// step that passes one or more of its ticks.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker { return c.newTicker(d, 0) }

func (c *Clock) newTicker(d time.Duration, phase int) clock.Ticker {
	if d <= 0 {
		panic("simtime: non-positive interval for NewTicker")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &ticker{c: c, ch: make(chan time.Time, 1), period: d, next: c.now.Add(d), phase: phase}
	c.tickers[t] = struct{}{}
	return t
}

// Next is the soonest deadline of a pending timer, and false when none
// is pending.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].at, true
}

// Pending counts the timers waiting to fire.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Changed is signalled when the soonest deadline may have changed.
func (c *Clock) Changed() <-chan struct{} { return c.changed }

// Advance moves the clock to to (never back) and fires the due timers
// of the first phase that has any (FireDue), and every ticker that passed
// a tick. It reports how many timers fired.
func (c *Clock) Advance(to time.Time) int {
	n, _ := c.advance(to)
	return n
}

func (c *Clock) advance(to time.Time) (int, map[string]int) {
	c.mu.Lock()
	if to.After(c.now) {
		c.now = to
	}
	c.mu.Unlock()
	return c.fireDue()
}

// Due reports whether a timer is due now.
func (c *Clock) Due() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers) > 0 && !c.timers[0].at.After(c.now)
}

// FireDue fires the timers due now of the earliest phase that has any
// (those set through the clock itself first, then those of Phase(1),
// Phase(2) and so on), and reports how many it fired. A Driver calls it
// again, phase after phase, as the cluster settles from each.
func (c *Clock) FireDue() int {
	n, _ := c.fireDue()
	return n
}

// fireDue is FireDue, which also says how many timers of each cause
// (the component that set it) fired.
func (c *Clock) fireDue() (int, map[string]int) {
	c.mu.Lock()
	now := c.now
	var due, keep []*timer
	phase := -1
	for len(c.timers) > 0 && !c.timers[0].at.After(now) {
		t := heap.Pop(&c.timers).(*timer)
		switch {
		case phase < 0 || t.phase < phase:
			keep = append(keep, due...)
			due, phase = []*timer{t}, t.phase
		case t.phase == phase:
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	for _, t := range keep {
		heap.Push(&c.timers, t)
	}
	// A ticker ticks with the timers of its phase: one of a later phase
	// than any due now waits for a step of its phase, as its timers
	// would, so that it never wakes its component before the moment's
	// earlier phases have settled.
	var ticks []*ticker
	for t := range c.tickers {
		if t.phase <= max(phase, 0) && !t.next.After(now) {
			ticks = append(ticks, t)
			for !t.next.After(now) {
				t.next = t.next.Add(t.period)
			}
		}
	}
	c.mu.Unlock()
	c.activity.touch()
	if traceTimers && len(due) > 0 {
		traceAdvance(now, due)
	}
	for _, t := range ticks {
		select {
		case t.ch <- now:
		default:
		}
	}
	causes := make(map[string]int, 2)
	for _, t := range due {
		causes[t.cause]++
		t.fire(now)
	}
	return len(due), causes
}

// deadline is when a timer set for d from now fires: rounded up to the
// step, and never before now.
func (c *Clock) deadline(d time.Duration) time.Time {
	at := c.now.Add(d)
	if r := at.Sub(at.Truncate(c.step)); r > 0 {
		at = at.Add(c.step - r)
	}
	if at.Before(c.now) {
		return c.now
	}
	return at
}

// arm schedules t for d from now. A timer of phase 0 already due fires at
// once; one of a later phase waits for its phase of the moment.
func (c *Clock) arm(t *timer, d time.Duration) {
	if t.cause == "" {
		t.cause = timerCause()
	}
	c.mu.Lock()
	if d <= 0 && t.phase == 0 {
		now := c.now
		c.mu.Unlock()
		c.activity.touch()
		t.fire(now)
		return
	}
	c.timerSeq++
	t.seq = c.timerSeq
	t.at = c.deadline(d)
	if traceTimers {
		t.caller = callers()
		if Tracing && strings.Contains(t.caller, "upstream/job") {
			Tracef("timer set at %s for %s by %s", c.now.Format(time.TimeOnly), t.at.Format(time.TimeOnly), t.caller)
		}
	}
	heap.Push(&c.timers, t)
	c.mu.Unlock()
	c.signal()
}

func (c *Clock) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// timer is a one-shot timer of a Clock: a channel, or a function f.
type timer struct {
	c     *Clock
	ch    chan time.Time
	f     func()
	phase int
	at    time.Time
	seq   uint64
	index int // in the clock's heap; -1 when not pending
	// caller is where the timer was set, when traceTimers is on.
	caller string
	// cause is the component that set it (timerCause).
	cause string
}

func (t *timer) C() <-chan time.Time { return t.ch }

// Stop keeps t from firing; it reports whether t was pending.
func (t *timer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.timers, t.index)
	c.signal()
	return true
}

// Reset re-arms t for d from now; it reports whether t was pending.
func (t *timer) Reset(d time.Duration) bool {
	was := t.Stop()
	t.c.arm(t, d)
	return was
}

func (t *timer) fire(now time.Time) {
	if t.f != nil {
		a := t.c.activity
		a.begin()
		go func() {
			defer a.end()
			t.f()
		}()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}

// ticker is a Clock's ticker.
type ticker struct {
	c      *Clock
	ch     chan time.Time
	period time.Duration
	next   time.Time
	// phase is the phase whose steps it ticks with, or a later one's.
	phase int
}

func (t *ticker) C() <-chan time.Time { return t.ch }

func (t *ticker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	delete(t.c.tickers, t)
}

// timerHeap orders pending timers by deadline, then by creation.
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	if h[i].phase != h[j].phase {
		return h[i].phase < h[j].phase
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
