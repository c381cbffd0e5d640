package job

import (
	"context"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"

	"berth.io/berth/internal/simtime"
)

var start = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

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
		q := newQueue(clk)
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
	q := newQueue(clk)
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

// TestReplaceQueue: berth's queue takes the place of upstream's inside
// upstream's Job controller (an unexported field, so a change upstream
// shows here), and upstream's is shut down.
func TestReplaceQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := simtime.NewClock(start, time.Second)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := newControllerWithClock(ctx, client, clk, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := reflect.ValueOf(c).Elem().FieldByName("queue")
	field := (*workqueue.TypedRateLimitingInterface[string])(unsafe.Pointer(f.UnsafeAddr()))
	old := *field

	q := newQueue(clk)
	if err := replaceQueue(c, q); err != nil {
		t.Fatal(err)
	}
	if *field != q {
		t.Error("the controller's queue is not berth's after replaceQueue")
	}
	if !old.ShuttingDown() {
		t.Error("upstream's queue was left running")
	}
}

// TestRetryCountsFromTheSyncsStart: a worker takes a Job at 0s and the
// clock steps to 1s before its sync sets the retry a minute on; the
// retry comes at 1m, not 1m1s, and the clock's activity counts it late.
// A Job no worker holds waits a minute from when it is added.
func TestRetryCountsFromTheSyncsStart(t *testing.T) {
	clk := simtime.NewClock(start, time.Second)
	q := newQueue(clk)
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
