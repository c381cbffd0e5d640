package clockqueue

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"berth.io/berth/internal/simtime"
)

var start = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

// newTestQueue is a queue as the Job controller's, on clk.
func newTestQueue(clk *simtime.Clock) workqueue.TypedRateLimitingInterface[string] {
	return New("test", "the test's controller", workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute), clk)
}

// get takes the next item from q, failing the test if none comes.
func get(t *testing.T, q workqueue.TypedInterface[string]) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		item, _ := q.Get()
		q.Done(item)
		got <- item
	}()
	select {
	case item := <-got:
		return item
	case <-time.After(10 * time.Second):
		t.Fatal("no item came out of the queue")
		return ""
	}
}

// empty fails the test if q holds an item ready to hand out.
func empty(t *testing.T, q workqueue.TypedInterface[string]) {
	t.Helper()
	// The timer's callback runs in a goroutine of its own: give it time
	// to add what it would wrongly add.
	time.Sleep(50 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("the queue holds %d items, want none yet", n)
	}
}

// TestQueueHandsOutTiesByKey: Jobs due at the same instant come out in
// the order of their keys, whichever order they were added in; an
// earlier deadline comes first whatever its key.
func TestQueueHandsOutTiesByKey(t *testing.T) {
	for _, order := range [][]string{{"team-b/train-2", "team-a/train-9", "team-b/train-1"}, {"team-b/train-1", "team-b/train-2", "team-a/train-9"}} {
		clk := simtime.NewClock(start, time.Second)
		q := newTestQueue(clk)
		for _, key := range order {
			q.AddAfter(key, time.Minute)
		}
		q.AddAfter("team-z/late", 90*time.Second)
		q.AddAfter("team-z/early", 30*time.Second)

		clk.Advance(start.Add(30 * time.Second))
		if got := get(t, q); got != "team-z/early" {
			t.Fatalf("added %v: first out %q, want team-z/early (due 30 s before the others)", order, got)
		}
		empty(t, q)
		clk.Advance(start.Add(time.Minute))
		var out []string
		for range order {
			out = append(out, get(t, q))
		}
		want := []string{"team-a/train-9", "team-b/train-1", "team-b/train-2"}
		if !reflect.DeepEqual(out, want) {
			t.Errorf("added %v: due together they came out %v, want %v", order, out, want)
		}
		empty(t, q)
		clk.Advance(start.Add(90 * time.Second))
		if got := get(t, q); got != "team-z/late" {
			t.Errorf("got %q at 90 s, want team-z/late", got)
		}
		q.ShutDown()
	}
}

// TestQueueKeepsTheEarlierDeadline: as client-go's delaying queue, an
// item added again while it waits keeps the earlier of its deadlines,
// and an item added with no delay is ready at once.
func TestQueueKeepsTheEarlierDeadline(t *testing.T) {
	clk := simtime.NewClock(start, time.Second)
	q := newTestQueue(clk)
	defer q.ShutDown()

	q.AddAfter("ns/a", time.Minute)
	q.AddAfter("ns/a", 10*time.Second)
	q.AddAfter("ns/a", 2*time.Minute)
	clk.Advance(start.Add(10 * time.Second))
	if got := get(t, q); got != "ns/a" {
		t.Fatalf("got %q at 10 s, want ns/a", got)
	}
	clk.Advance(start.Add(2 * time.Minute))
	empty(t, q)

	q.AddAfter("ns/now", 0)
	if got := get(t, q); got != "ns/now" {
		t.Fatalf("got %q, want ns/now added with no delay", got)
	}
	q.AddRateLimited("ns/failed")
	clk.Advance(clk.Now().Add(time.Second))
	if got := get(t, q); got != "ns/failed" {
		t.Fatalf("got %q, want ns/failed after the rate limiter's first second", got)
	}
}

// TestRetryCountsFromTheSyncsStart: a worker takes a Job at 0s and the
// clock steps to 1s before its sync sets the retry a minute on; the
// retry comes at 1m, not 1m1s, and the clock's activity counts it late.
// A Job no worker holds waits a minute from when it is added.
func TestRetryCountsFromTheSyncsStart(t *testing.T) {
	clk := simtime.NewClock(start, time.Second)
	q := newTestQueue(clk)
	q.Add("team-b/train-1")
	item, _ := q.Get()
	clk.Advance(start.Add(time.Second))
	q.AddAfter(item, time.Minute)
	q.Done(item)
	q.AddAfter("team-b/train-2", time.Minute)
	if got := clk.Activity().Late(); got != 1 {
		t.Errorf("%d pieces of work noted late; want 1, the retry set after the clock stepped", got)
	}
	clk.Advance(start.Add(59 * time.Second))
	empty(t, q)
	clk.Advance(start.Add(time.Minute))
	if got := get(t, q); got != item {
		t.Fatalf("got %q at 1m; want %q, a minute after its sync began", got, item)
	}
	empty(t, q)
	clk.Advance(start.Add(time.Minute + time.Second))
	if got := get(t, q); got != "team-b/train-2" {
		t.Fatalf("got %q at 1m1s; want team-b/train-2, a minute after it was added", got)
	}
}

// TestSyncIsWorkUntilDone: an item is work in flight on the clock from
// when it is queued until the worker that took it is done, through a
// re-add while the worker holds it (the queue hands it out again), but
// not while it waits out a delay; a shut-down queue owes nothing.
func TestSyncIsWorkUntilDone(t *testing.T) {
	clk := simtime.NewClock(start, time.Second)
	q := newTestQueue(clk)
	busy := func() string { return clk.Activity().Busy() }

	q.AddAfter("ns/hpa", 15*time.Second)
	if got := busy(); got != "" {
		t.Fatalf("at work: %q while the only item waits out its delay; want nothing", got)
	}
	clk.Advance(start.Add(15 * time.Second))
	// The timer's callback adds it in a goroutine of its own, itself
	// work while it runs.
	want := "the test's controller's syncs, queued or under way (1)"
	for deadline := time.Now().Add(10 * time.Second); busy() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("at work: %q with the item due; want %q", busy(), want)
		}
		time.Sleep(time.Millisecond)
	}
	item, _ := q.Get()
	q.Add(item) // an informer's event during the sync
	q.Done(item)
	if got := busy(); got == "" {
		t.Fatal("nothing at work with the item queued again during its sync; want it counted")
	}
	item, _ = q.Get()
	q.AddAfter(item, 15*time.Second) // the next sync
	q.Done(item)
	if got := busy(); got != "" {
		t.Fatalf("at work: %q once the sync is done and its next waits; want nothing", got)
	}

	q.Add("ns/other")
	q.ShutDown()
	if got := busy(); got != "" {
		t.Fatalf("at work: %q after the queue shut down; want nothing", got)
	}
}

// TestLateTakeKeepsTheGrid: an item due at 15s that a worker takes only
// once the clock stands at 21s (the clock should not have stepped; the
// count above is what stops it) has its next sync at 30s, on the sync
// period's grid, not at 36s; the clock's activity counts it late.
func TestLateTakeKeepsTheGrid(t *testing.T) {
	clk := simtime.NewClock(start, time.Second)
	q := newTestQueue(clk)
	defer q.ShutDown()
	q.AddAfter("ns/hpa", 15*time.Second)
	clk.Advance(start.Add(15 * time.Second))
	for q.Len() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(start.Add(21 * time.Second))
	item, _ := q.Get()
	q.AddAfter(item, 15*time.Second)
	q.Done(item)
	if got := clk.Activity().Late(); got != 1 {
		t.Errorf("%d pieces of work noted late; want 1", got)
	}
	clk.Advance(start.Add(29 * time.Second))
	empty(t, q)
	clk.Advance(start.Add(30 * time.Second))
	if got := get(t, q); got != item {
		t.Fatalf("got %q at 30s; want %q, 15s after it was due", got, item)
	}
}
