package simtime

import (
	"sync/atomic"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func TestClockStandsStillUntilAdvanced(t *testing.T) {
	c := NewClock(epoch.Add(300*time.Millisecond), 0)
	if got := c.Now(); !got.Equal(epoch) {
		t.Fatalf("Now() = %v, want the start truncated to the step, %v", got, epoch)
	}
	time.Sleep(5 * time.Millisecond)
	if got := c.Now(); !got.Equal(epoch) {
		t.Fatalf("Now() moved on its own: %v", got)
	}
}

func TestTimersFireInOrderWhenTheClockReachesThem(t *testing.T) {
	c := NewClock(epoch, 0)
	late := c.After(10 * time.Second)
	soon := c.NewTimer(2 * time.Second)
	if at, ok := c.Next(); !ok || !at.Equal(epoch.Add(2*time.Second)) {
		t.Fatalf("Next() = %v, %v; want the sooner deadline, %v", at, ok, epoch.Add(2*time.Second))
	}
	if n := c.Advance(epoch.Add(time.Second)); n != 0 {
		t.Fatalf("Advance to 1s fired %d timers, want none", n)
	}
	select {
	case <-soon.C():
		t.Fatal("a 2 s timer fired at 1 s")
	default:
	}
	if n := c.Advance(epoch.Add(2 * time.Second)); n != 1 {
		t.Fatalf("Advance to 2s fired %d timers, want 1", n)
	}
	if got := <-soon.C(); !got.Equal(epoch.Add(2 * time.Second)) {
		t.Errorf("the timer received %v, want the clock's time %v", got, epoch.Add(2*time.Second))
	}
	select {
	case <-late:
		t.Fatal("a 10 s timer fired at 2 s")
	default:
	}
	c.Advance(epoch.Add(time.Minute))
	if got := <-late; !got.Equal(epoch.Add(time.Minute)) {
		t.Errorf("the late timer received %v, want %v", got, epoch.Add(time.Minute))
	}
	if _, ok := c.Next(); ok {
		t.Error("Next() reports a pending timer after every timer fired")
	}
}

func TestDeadlinesRoundUpToTheStep(t *testing.T) {
	c := NewClock(epoch, time.Second)
	c.After(5 * time.Millisecond)
	if at, _ := c.Next(); !at.Equal(epoch.Add(time.Second)) {
		t.Errorf("a 5 ms timer is due at %v, want the next whole second %v", at, epoch.Add(time.Second))
	}
	c2 := NewClock(epoch, time.Second)
	c2.After(3 * time.Second)
	if at, _ := c2.Next(); !at.Equal(epoch.Add(3 * time.Second)) {
		t.Errorf("a 3 s timer is due at %v, want %v", at, epoch.Add(3*time.Second))
	}
}

func TestAZeroTimerFiresAtOnce(t *testing.T) {
	c := NewClock(epoch, 0)
	select {
	case got := <-c.After(0):
		if !got.Equal(epoch) {
			t.Errorf("After(0) received %v, want %v", got, epoch)
		}
	default:
		t.Fatal("After(0) did not fire at once")
	}
	if c.Pending() != 0 {
		t.Errorf("%d timers pending after After(0)", c.Pending())
	}
}

func TestStopAndReset(t *testing.T) {
	c := NewClock(epoch, 0)
	tm := c.NewTimer(time.Second)
	if !tm.Stop() {
		t.Error("Stop() of a pending timer reported false")
	}
	if tm.Stop() {
		t.Error("a second Stop() reported true")
	}
	c.Advance(epoch.Add(time.Minute))
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	if tm.Reset(5 * time.Second) {
		t.Error("Reset() of a stopped timer reported it pending")
	}
	if at, _ := c.Next(); !at.Equal(epoch.Add(time.Minute + 5*time.Second)) {
		t.Errorf("a timer reset at 1m for 5 s is due at %v", at)
	}
}

func TestAfterFuncCountsAsWorkUntilItReturns(t *testing.T) {
	c := NewClock(epoch, 0)
	release := make(chan struct{})
	var ran atomic.Bool
	c.AfterFunc(time.Second, func() {
		<-release
		ran.Store(true)
	})
	if busy := c.Activity().Busy(); busy != "" {
		t.Fatalf("busy before the callback fired: %s", busy)
	}
	c.Advance(epoch.Add(time.Second))
	if c.Activity().Busy() == "" {
		t.Fatal("not busy while the callback runs")
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for c.Activity().Busy() != "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !ran.Load() || c.Activity().Busy() != "" {
		t.Fatalf("the callback ran: %v; busy after it returned: %q", ran.Load(), c.Activity().Busy())
	}
}

func TestTickersTickAsTheClockPassesAndNeverHoldIt(t *testing.T) {
	c := NewClock(epoch, 0)
	tk := c.NewTicker(time.Second)
	if _, ok := c.Next(); ok {
		t.Fatal("a ticker is a deadline the clock stops at; it should be a poll")
	}
	c.Advance(epoch.Add(90 * time.Second))
	select {
	case got := <-tk.C():
		if !got.Equal(epoch.Add(90 * time.Second)) {
			t.Errorf("tick at %v, want the clock's time %v", got, epoch.Add(90*time.Second))
		}
	default:
		t.Fatal("no tick after passing 90 of them")
	}
	select {
	case <-tk.C():
		t.Fatal("the ticker queued more than one tick")
	default:
	}
	c.Advance(epoch.Add(90*time.Second + 500*time.Millisecond))
	select {
	case <-tk.C():
		t.Fatal("ticked before its next period")
	default:
	}
	tk.Stop()
	c.Advance(epoch.Add(time.Hour))
	select {
	case <-tk.C():
		t.Fatal("a stopped ticker ticked")
	default:
	}
}

func TestLaterPhasesFireAfterTheEarlierOnesOfTheirMoment(t *testing.T) {
	c := NewClock(epoch, 0)
	second := c.Phase(2).NewTimer(10 * time.Second)
	first := c.Phase(1).NewTimer(10 * time.Second)
	early := c.NewTimer(10 * time.Second)
	if at, _ := c.Next(); !at.Equal(epoch.Add(10 * time.Second)) {
		t.Fatalf("Next() = %v, want the shared deadline", at)
	}
	fired := func(tm interface{ C() <-chan time.Time }) bool {
		select {
		case <-tm.C():
			return true
		default:
			return false
		}
	}
	if n := c.Advance(epoch.Add(10 * time.Second)); n != 1 || !fired(early) || fired(first) || fired(second) {
		t.Fatalf("Advance fired %d timers; want phase 0's alone", n)
	}
	if !c.Due() {
		t.Fatal("Due() is false with later phases due")
	}
	if n := c.FireDue(); n != 1 || !fired(first) || fired(second) {
		t.Fatalf("the second FireDue fired %d timers; want phase 1's alone", n)
	}
	if n := c.FireDue(); n != 1 || !fired(second) {
		t.Fatalf("the third FireDue fired %d timers; want phase 2's", n)
	}
	if c.Due() || c.Pending() != 0 {
		t.Errorf("after every phase: due %v, %d pending", c.Due(), c.Pending())
	}
}

func TestSequencedReadingsKeepTheirOrderWithinAStep(t *testing.T) {
	c := NewClock(epoch, 0)
	s := c.Sequenced()
	a, b := s.Now(), s.Now()
	if !a.Before(b) || b.Sub(epoch) >= time.Microsecond {
		t.Errorf("readings %v, %v; want increasing by nanoseconds within the step", a, b)
	}
	c.Advance(epoch.Add(time.Second))
	if got := s.Now(); got != epoch.Add(time.Second+1) {
		t.Errorf("the first reading after a step is %v; want the step plus a nanosecond", got)
	}
}

// A timer of a later phase set for now waits for its phase: a component
// looking at the cluster last in its moment never sees the moment half
// done, however it sets its timer.
func TestALaterPhasesTimerDueNowWaitsForItsPhase(t *testing.T) {
	c := NewClock(epoch, 0)
	late := c.Phase(2).After(0)
	select {
	case <-late:
		t.Fatal("a phase 2 timer for now fired at once")
	default:
	}
	if !c.Due() {
		t.Fatal("the phase 2 timer is not due now")
	}
	c.FireDue()
	select {
	case <-late:
	default:
		t.Fatal("FireDue did not fire it")
	}
}

// A ticker of a later phase ticks with that phase's timers, not with an
// earlier phase's step at the same moment: a workqueue's heartbeat on the
// HPA's phase must not wake it while the moment's pods are still being
// made.
func TestALaterPhasesTickerTicksInItsPhase(t *testing.T) {
	c := NewClock(epoch, 0)
	hpa := c.Phase(1)
	tk := hpa.NewTicker(10 * time.Second)
	c.NewTimer(10 * time.Second) // phase 0, due with the tick
	hpa.NewTimer(10 * time.Second)
	c.Advance(epoch.Add(10 * time.Second)) // fires phase 0
	select {
	case <-tk.C():
		t.Fatal("a phase-1 ticker ticked in the moment's phase-0 step")
	default:
	}
	if n := c.FireDue(); n != 1 {
		t.Fatalf("the phase-1 step fired %d timers; want 1", n)
	}
	select {
	case <-tk.C():
	default:
		t.Fatal("the phase-1 ticker did not tick in its phase's step")
	}
}
