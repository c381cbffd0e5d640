package simtime

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestRemoteFollowsTheOwnersClock: a follower's timers (as in
// berth-kueue's process) stop the owner's clock at their deadlines, fire
// when the owner's clock reaches them, and the owner waits for the work
// they start before it steps on.
func TestRemoteFollowsTheOwnersClock(t *testing.T) {
	owner := NewClock(epoch, 0)
	follower := NewClock(epoch, 0)
	queries, toFollower := io.Pipe()
	fromFollower, answers := io.Pipe()
	r := owner.Remote("follower", toFollower)
	go func() {
		s := bufio.NewScanner(fromFollower)
		for s.Scan() {
			if !r.Answer(s.Text()) {
				t.Errorf("the owner did not take %q as an answer", s.Text())
			}
		}
		r.Gone()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if err := Follow(ctx, follower, queries, answers); err != nil && ctx.Err() == nil {
			t.Errorf("Follow: %v", err)
		}
	}()

	var mu sync.Mutex
	var seen [][2]time.Duration
	done := make(chan struct{})
	work := follower.Activity().Counter("work")
	var next func(n int)
	next = func(n int) {
		follower.AfterFunc(10*time.Minute, func() {
			work.Begin()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			seen = append(seen, [2]time.Duration{follower.Since(epoch), owner.Since(epoch)})
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
	d := NewDriver(owner)
	go d.Run(ctx)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the owner's clock did not reach the follower's last timer in 30 s")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, s := range seen {
		want := time.Duration(i+1) * 10 * time.Minute
		if s[0] != want || s[1] != want {
			t.Errorf("timer %d fired at %v of the follower's clock and %v of the owner's, want %v on both", i+1, s[0], s[1], want)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("saw %d timers fire, want 3", len(seen))
	}
}

// TestRemoteHoldsTheClockUntilAnswered: a follower that has not
// answered for this moment keeps the owner's clock from settling.
func TestRemoteHoldsTheClockUntilAnswered(t *testing.T) {
	owner := NewClock(epoch, 0)
	w := &lines{}
	r := owner.Remote("follower", w)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := NewDriver(owner).Settle(ctx); err == nil {
		t.Fatal("the owner settled with its follower's query unanswered")
	}
	q := w.last()
	seq, at, _, err := parseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	if !at.Equal(epoch) {
		t.Errorf("asked to settle at %v, want %v", at, epoch)
	}
	r.Answer("settled " + itoa(seq) + " 0")
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := NewDriver(owner).Settle(ctx); err != nil {
		t.Fatalf("the owner did not settle once its follower answered: %v", err)
	}
}

type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.l = append(l.l, string(p))
	return len(p), nil
}

func (l *lines) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.l) == 0 {
		return ""
	}
	return l.l[len(l.l)-1]
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
