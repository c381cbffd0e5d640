// Package clockqueue is a work queue for an upstream controller run on a
// rehearsal's clock: client-go's rate-limiting queue over a delaying
// queue of berth's, which keeps a controller's timing the same in every
// replay of a trace. The Job and HPA controllers take it.
//
// client-go's delaying queue differs from it in three ways, each of
// which made two replays of one seed part:
//
//   - Items due at the same instant come out in the order of their
//     keys. client-go keeps waiting items in a heap ordered by deadline
//     alone, so items due together come out in whatever order the heap
//     kept them, which depends on the order they were added: from a
//     worker (a retry) and from the informers' handlers (a pod that
//     ended), in the order the machine ran them. On a rehearsal's clock
//     deadlines coincide often (two Jobs retried at the Job controller's
//     one-minute cap), and the item served first takes the quota the
//     other then waits for.
//   - An item is work in flight on the clock from when it is queued
//     until a worker is done with it: the clock does not step while a
//     controller has a sync to start or under way, whatever the sync
//     waits on out of the clock's other sights (a goroutine the machine
//     is slow to run, a write to a log). An HPA sync during which the
//     clock stepped set its next sync from the later moment, and every
//     sync after it, and the service's replicas fell seconds later.
//   - A delay set while a worker holds the item counts from the moment
//     the item was queued, not from now: where the clock stepped anyway,
//     the controller keeps its timing (and the step is noted late, for
//     the report).
package clockqueue

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"berth.io/berth/internal/simtime"
)

// New is the rate-limiting queue upstream builds for its controller
// (name, limiter, clock), over berth's delaying queue. component names
// the controller in what the clock reports ("the Job controller").
func New(name, component string, limiter workqueue.TypedRateLimiter[string], clk clock.WithTickerAndDelayedExecution) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
		workqueue.TypedRateLimitingQueueConfig[string]{
			Name:          name,
			Clock:         clk,
			DelayingQueue: newDelaying(name, component, clk),
		})
}

// delaying is a delaying work queue whose waiting items come out in the
// order of their deadlines, then of their keys. As client-go's, an item
// waits once: added again while waiting, it keeps the earlier of the two
// deadlines. Its timer runs on the clock the queue was given, so on a
// rehearsal's clock the clock counts the moving of due items as work.
type delaying struct {
	workqueue.TypedInterface[string]
	clock     clock.WithDelayedExecution
	component string
	// work, on a rehearsal's clock, counts the items queued or held by
	// a worker; late notes a delay counted from a sync's start rather
	// than from now (simtime.Activity.NoteLate). Both nil elsewhere.
	work *simtime.Counter
	late func(what string)

	mu sync.Mutex
	// waiting holds each waiting item's deadline.
	waiting map[string]time.Time
	// queued holds, for each item queued and not yet taken, the moment
	// it was first queued; taken, for each item a worker has taken (Get)
	// and not yet finished (Done), the moment it was queued.
	queued map[string]time.Time
	taken  map[string]time.Time
	// timer fires at armed, the soonest deadline when it was set; gen
	// tells its callback from one of a timer since replaced.
	timer clock.Timer
	armed time.Time
	gen   uint64
}

func newDelaying(name, component string, clk clock.WithTickerAndDelayedExecution) *delaying {
	q := &delaying{
		TypedInterface: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name, Clock: clk}),
		clock:          clk,
		component:      component,
		waiting:        map[string]time.Time{},
		queued:         map[string]time.Time{},
		taken:          map[string]time.Time{},
	}
	if c, ok := clk.(interface{ Activity() *simtime.Activity }); ok {
		q.work = c.Activity().Counter(component + "'s syncs, queued or under way")
		q.late = c.Activity().NoteLate
	}
	return q
}

// owed reports whether item is queued or held by a worker. q.mu is held.
func (q *delaying) owed(item string) bool {
	_, queued := q.queued[item]
	_, taken := q.taken[item]
	return queued || taken
}

// Add queues item, counting it as work from now if it was not already.
func (q *delaying) Add(item string) {
	if q.ShuttingDown() {
		return
	}
	q.mu.Lock()
	if _, ok := q.queued[item]; !ok {
		if !q.owed(item) && q.work != nil {
			q.work.Begin()
		}
		q.queued[item] = q.clock.Now()
	}
	q.mu.Unlock()
	q.TypedInterface.Add(item)
}

// Get takes the next item, noting the moment it was queued.
func (q *delaying) Get() (string, bool) {
	item, shutdown := q.TypedInterface.Get()
	if shutdown {
		return item, shutdown
	}
	q.mu.Lock()
	at, ok := q.queued[item]
	if !ok {
		at = q.clock.Now()
	}
	delete(q.queued, item)
	q.taken[item] = at
	q.mu.Unlock()
	return item, shutdown
}

// Done finishes an item Get took. It stays work in flight if it was
// queued again meanwhile (the queue hands it out again).
func (q *delaying) Done(item string) {
	q.mu.Lock()
	delete(q.taken, item)
	if !q.owed(item) && q.work != nil {
		q.work.End()
	}
	q.mu.Unlock()
	q.TypedInterface.Done(item)
}

// AddAfter adds item once d has passed on the queue's clock: d from now,
// or, for an item a worker holds, d from the moment it was queued. On a
// real cluster a sync takes milliseconds and the two are one; on a
// rehearsal's clock the clock does not step during a sync, and where it
// did, counting from the sync's start keeps the next at the moment the
// controller sets, the same in every replay.
func (q *delaying) AddAfter(item string, d time.Duration) {
	if q.ShuttingDown() {
		return
	}
	if d <= 0 {
		q.Add(item)
		return
	}
	now := q.clock.Now()
	q.mu.Lock()
	from := now
	if took, ok := q.taken[item]; ok && took.Before(now) {
		from = took
		if q.late != nil {
			q.late(fmt.Sprintf("%s's sync of %s was queued at %s and set its next at %s", q.component, item, took.Format(time.TimeOnly), now.Format(time.TimeOnly)))
		}
	}
	at := from.Add(d)
	if !at.After(now) {
		q.mu.Unlock()
		q.Add(item)
		return
	}
	defer q.mu.Unlock()
	if prev, ok := q.waiting[item]; ok && !at.Before(prev) {
		return
	}
	q.waiting[item] = at
	q.arm(at)
}

// arm makes sure a timer fires by at. q.mu is held.
func (q *delaying) arm(at time.Time) {
	if q.timer != nil && !at.Before(q.armed) {
		return
	}
	if q.timer != nil {
		q.timer.Stop()
	}
	q.gen++
	gen := q.gen
	q.armed = at
	q.timer = q.clock.AfterFunc(at.Sub(q.clock.Now()), func() { q.fire(gen) })
}

// fire adds the items now due, in order, and arms the timer for the
// next deadline.
func (q *delaying) fire(gen uint64) {
	q.mu.Lock()
	now := q.clock.Now()
	type due struct {
		item string
		at   time.Time
	}
	var ready []due
	for item, at := range q.waiting {
		if !at.After(now) {
			ready = append(ready, due{item, at})
			delete(q.waiting, item)
		}
	}
	if gen == q.gen {
		q.timer = nil
	}
	var next time.Time
	for _, at := range q.waiting {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if !next.IsZero() && !q.ShuttingDown() {
		q.arm(next)
	}
	q.mu.Unlock()

	slices.SortFunc(ready, func(a, b due) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.item, b.item))
	})
	for _, d := range ready {
		q.Add(d.item)
	}
}

// ShutDown stops the timer and shuts the queue down.
func (q *delaying) ShutDown() {
	q.stop()
	q.TypedInterface.ShutDown()
}

// ShutDownWithDrain stops the timer and shuts the queue down once the
// items being processed are done.
func (q *delaying) ShutDownWithDrain() {
	q.stop()
	q.TypedInterface.ShutDownWithDrain()
}

// stop stops the timer and counts the items no worker will take as
// work no longer in flight.
func (q *delaying) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	q.gen++
	for item := range q.queued {
		delete(q.queued, item)
		if !q.owed(item) && q.work != nil {
			q.work.End()
		}
	}
}
