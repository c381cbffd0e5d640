package simtime

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// The driver counts the moments each component's timers stopped the
// clock at, those it stopped it at alone, and shares the settling after
// a moment's timers among the components whose timers fired.
func TestDriverCountsMomentsByCause(t *testing.T) {
	c := NewClock(epoch, 0)
	d := NewDriver(c)
	work := c.Activity().Counter("work")
	done := make(chan struct{})
	// kwok at 10 s and 20 s; the trace at 20 s (with kwok) and 30 s,
	// where its work keeps the cluster busy a while.
	c.newTimerOf("kwok", 10*time.Second, func() {}, 0)
	c.newTimerOf("kwok", 20*time.Second, func() {}, 0)
	c.newTimerOf("trace", 20*time.Second, func() {}, 0)
	c.newTimerOf("trace", 30*time.Second, func() {
		work.Begin()
		time.Sleep(30 * time.Millisecond)
		work.End()
	}, 0)
	c.newTimerOf("end", time.Minute, func() { close(done) }, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the driver did not reach the last timer in 30 s")
	}
	cancel()
	s := d.Stats()
	for name, want := range map[string]Cause{
		"kwok":  {Moments: 2, Alone: 1, Timers: 2},
		"trace": {Moments: 2, Alone: 1, Timers: 2},
		"end":   {Moments: 1, Alone: 1, Timers: 1},
	} {
		got := s.Causes[name]
		got.Settling = 0
		if got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if st := s.Causes["trace"].Settling; st < 30*time.Millisecond {
		t.Errorf("the trace's share of the settling is %v; its work alone took 30ms", st)
	}
}

// A timer's cause is the component of the first frame outside the clock
// and the queues that wrap it.
func TestTimerCauseNamesTheComponent(t *testing.T) {
	for fn, want := range map[string]string{
		"sigs.k8s.io/kwok/pkg/utils/queue.(*weightDelayingQueue[...]).loopWorker": "KWOK (simulated kubelets' stages)",
		"berth.io/berth/internal/upstream/job.(*delayingQueue).arm":               "Job controller",
		"berth.io/berth/internal/cluster.flushLeftovers":                          "kube-scheduler",
		"berth.io/berth/internal/autoscaler.(*Controller).waitForScan":            "node autoscaler",
		"berth.io/berth/internal/rehearse.waitUntil":                              "the trace's rows",
		"berth.io/berth/internal/cluster.runKWOK":                                 "",
	} {
		if got := componentOf(fn); got != want {
			t.Errorf("componentOf(%s) = %q, want %q", fn, got, want)
		}
	}
	// A timer this package's test sets directly is of no component.
	var pcs [causeDepth]uintptr
	n := runtime.Callers(1, pcs[:])
	if got := causeOf(pcs[:n]); got != otherCause {
		t.Errorf("a test's own timer: %q, want %q", got, otherCause)
	}
}
