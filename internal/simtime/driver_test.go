package simtime

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestDriverJumpsToEachDeadlineOnceSettled: a chain of timers, each set
// by the work the one before started, runs through an hour of clock time
// in a handful of steps, every one at its exact time.
func TestDriverJumpsToEachDeadlineOnceSettled(t *testing.T) {
	c := NewClock(epoch, 0)
	d := NewDriver(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var seen []time.Duration
	done := make(chan struct{})
	work := c.Activity().Counter("work")
	var next func(n int)
	next = func(n int) {
		c.AfterFunc(20*time.Minute, func() {
			// Work that takes wall time: the clock must wait for it.
			work.Begin()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			seen = append(seen, c.Since(epoch))
			mu.Unlock()
			work.End()
			if n < 3 {
				next(n + 1)
			} else {
				close(done)
			}
		})
	}
	next(1)
	go d.Run(ctx)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the driver did not reach the last timer in 30 s")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []time.Duration{20 * time.Minute, 40 * time.Minute, time.Hour}
	if len(seen) != len(want) {
		t.Fatalf("saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("step %d at %v of clock time, want %v", i, seen[i], want[i])
		}
	}
	if s := d.Stats(); s.Steps < 3 {
		t.Errorf("%d steps for three deadlines", s.Steps)
	}
}

// TestDriverWaitsForGoroutinesNoCounterSees: work that only the runtime
// sees (a goroutine computing) holds the clock until it ends.
func TestDriverWaitsForGoroutinesNoCounterSees(t *testing.T) {
	c := NewClock(epoch, 0)
	d := NewDriver(c)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := d.Settle(ctx); err == nil {
		t.Fatal("settled while a goroutine spun")
	}
	close(stop)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := d.Settle(ctx2); err != nil {
		t.Fatalf("did not settle once the goroutine stopped: %v", err)
	}
}

// TestDriverHoldsToItsSpeedCeiling: at speed 600, ten minutes of clock
// time take a second of wall time at least.
func TestDriverHoldsToItsSpeedCeiling(t *testing.T) {
	c := NewClock(epoch, 0)
	d := NewDriver(c)
	d.Speed = 600
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fired := c.After(10 * time.Minute)
	begin := time.Now()
	go d.Run(ctx)
	select {
	case <-fired:
	case <-time.After(30 * time.Second):
		t.Fatal("the timer never fired")
	}
	if took := time.Since(begin); took < time.Second {
		t.Errorf("ten minutes at speed 600 took %v of wall time, want a second or more", took)
	}
}

// A gate lets work through freely while no Driver holds it; held, it
// lets one piece through at a time, each once the rest has settled, until
// the component has no more.
func TestGateLetsWorkThroughOneAtATimeWhenHeld(t *testing.T) {
	c := NewClock(epoch, 0)
	var mu sync.Mutex
	pending := 3
	g := c.Activity().Gate("work", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return pending > 0
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !g.Wait(ctx) {
		t.Fatal("a gate no driver holds held work")
	}
	c.Activity().holdGates(true)
	passed := make(chan int, 10)
	go func() {
		for g.Wait(ctx) {
			mu.Lock()
			pending--
			left := pending
			mu.Unlock()
			passed <- left
		}
	}()
	select {
	case <-passed:
		t.Fatal("a held gate let work through with no driver settling")
	case <-time.After(50 * time.Millisecond):
	}
	d := NewDriver(c)
	if err := d.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	for want := 2; want >= 0; want-- {
		if left := <-passed; left != want {
			t.Fatalf("%d left after a piece; want %d", left, want)
		}
	}
	if s := d.Stats(); s.Gated != 3 {
		t.Errorf("the driver let %d pieces through; want 3", s.Gated)
	}
}

// A gate registered while the gates are held (a follower's component
// made after it began following the clock) holds from the start: it
// used to be free until the next hold, so its component ran as if no
// clock held it.
func TestGateRegisteredWhileHeldHolds(t *testing.T) {
	c := NewClock(epoch, 0)
	c.Activity().holdGates(true)
	g := c.Activity().Gate("late", func() bool { return true })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if g.Wait(ctx) {
		t.Fatal("a gate registered while the gates were held let work through with no driver settling")
	}
	c.Activity().holdGates(false)
	if !g.Wait(context.Background()) {
		t.Fatal("the gate held work once no driver held it")
	}
}
