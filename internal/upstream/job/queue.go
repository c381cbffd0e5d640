package job

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"
	"unsafe"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/utils/clock"

	"berth.io/berth/internal/simtime"
)

// newQueue is the Job controller's queue as upstream builds it (its rate
// limiter, name and clock), with one change: of the Jobs whose delays end
// at the same instant, it hands out the one with the smaller key first.
//
// client-go's delaying queue keeps waiting items in a heap ordered by
// deadline alone, so Jobs due together come out in whatever order the
// heap kept them, which depends on the order they were added: from the
// controller's worker (a retry after the quota refused a pod) and from
// the informers' handlers (a pod that ended), in the order the machine
// ran them. On a rehearsal's clock deadlines coincide often (two Jobs
// retried at the controller's one-minute cap, whole minutes apart), and
// the Job served first takes the quota the other then waits for: the
// order decided who ran, and two runs of one trace differed. Ordered by
// key as well, it is the same every run.
func newQueue(clk clock.WithTickerAndDelayedExecution) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](job.DefaultJobApiBackOff, job.MaxJobApiBackOff),
		workqueue.TypedRateLimitingQueueConfig[string]{
			Name:          "job",
			Clock:         clk,
			DelayingQueue: newDelayingQueue(clk),
		})
}

// replaceQueue puts q in c's place for upstream's queue, which it shuts
// down (stopping its goroutine and its ticker on the clock). It must
// come before c runs, and before the informers c handles start.
// upstream's queue is an unexported field; TestReplaceQueue checks that
// it is still there, with that type.
func replaceQueue(c *job.Controller, q workqueue.TypedRateLimitingInterface[string]) error {
	f := reflect.ValueOf(c).Elem().FieldByName("queue")
	want := reflect.TypeFor[workqueue.TypedRateLimitingInterface[string]]()
	if !f.IsValid() || f.Type() != want {
		return fmt.Errorf("upstream's Job controller has no field queue of type %s: berth's queue for it needs updating (internal/upstream/job)", want)
	}
	field := (*workqueue.TypedRateLimitingInterface[string])(unsafe.Pointer(f.UnsafeAddr()))
	old := *field
	*field = q
	old.ShutDown()
	return nil
}

// delayingQueue is a delaying work queue whose waiting items come out in
// the order of their deadlines, then of their keys. As client-go's, an
// item waits once: added again while waiting, it keeps the earlier of the
// two deadlines. Its timer runs on the clock the queue was given, so on
// a rehearsal's clock the clock counts the moving of due items as work.
type delayingQueue struct {
	workqueue.TypedInterface[string]
	clock clock.WithDelayedExecution
	// late, when the clock can say, notes a delay counted from a sync's
	// start rather than from now (simtime.Activity.NoteLate).
	late func(what string)

	mu sync.Mutex
	// waiting holds each waiting item's deadline.
	waiting map[string]time.Time
	// taken holds, for each item a worker has taken (Get) and not yet
	// finished (Done), the moment it took it.
	taken map[string]time.Time
	// timer fires at armed, the soonest deadline when it was set; gen
	// tells its callback from one of a timer since replaced.
	timer clock.Timer
	armed time.Time
	gen   uint64
}

func newDelayingQueue(clk clock.WithTickerAndDelayedExecution) *delayingQueue {
	q := &delayingQueue{
		TypedInterface: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "job", Clock: clk}),
		clock:          clk,
		waiting:        map[string]time.Time{},
		taken:          map[string]time.Time{},
	}
	if c, ok := clk.(interface{ Activity() *simtime.Activity }); ok {
		q.late = c.Activity().NoteLate
	}
	return q
}

// Get takes the next item, noting the moment it was taken.
func (q *delayingQueue) Get() (string, bool) {
	item, shutdown := q.TypedInterface.Get()
	if !shutdown {
		q.mu.Lock()
		q.taken[item] = q.clock.Now()
		q.mu.Unlock()
	}
	return item, shutdown
}

// Done finishes an item Get took.
func (q *delayingQueue) Done(item string) {
	q.mu.Lock()
	delete(q.taken, item)
	q.mu.Unlock()
	q.TypedInterface.Done(item)
}

// AddAfter adds item once d has passed on the queue's clock: d from now,
// or, for an item a worker is syncing, d from the moment the worker took
// it. On a real cluster a sync takes milliseconds and the two are one;
// on a rehearsal's clock the clock should not step during a sync, and
// where it did (something in the sync waited out of the Driver's sight),
// counting from the sync's start keeps the retry at the moment the Job's
// backoff sets, the same in every replay, where counting from now made
// it a second late, and every retry after it.
func (q *delayingQueue) AddAfter(item string, d time.Duration) {
	if q.ShuttingDown() {
		return
	}
	if d <= 0 {
		q.Add(item)
		return
	}
	now := q.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	from := now
	if took, ok := q.taken[item]; ok && took.Before(now) {
		from = took
		if q.late != nil {
			q.late(fmt.Sprintf("the Job controller's sync of %s began at %s and set its next at %s", item, took.Format(time.TimeOnly), now.Format(time.TimeOnly)))
		}
	}
	at := from.Add(d)
	if !at.After(now) {
		q.TypedInterface.Add(item)
		return
	}
	if prev, ok := q.waiting[item]; ok && !at.Before(prev) {
		return
	}
	q.waiting[item] = at
	q.arm(at)
}

// arm makes sure a timer fires by at. q.mu is held.
func (q *delayingQueue) arm(at time.Time) {
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
func (q *delayingQueue) fire(gen uint64) {
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
func (q *delayingQueue) ShutDown() {
	q.stop()
	q.TypedInterface.ShutDown()
}

// ShutDownWithDrain stops the timer and shuts the queue down once the
// items being processed are done.
func (q *delayingQueue) ShutDownWithDrain() {
	q.stop()
	q.TypedInterface.ShutDownWithDrain()
}

func (q *delayingQueue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	q.gen++
}
