package simtime

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// RemoteProtocol is the version of the lines a clock's owner and its
// follower exchange (queries, answers, watch byte counts): raise it with
// any change to them, so that a berth and a berth-kueue built apart
// refuse to run together rather than misread each other
// (version.Peer).
const RemoteProtocol = 1

// A rehearsal's clock reaches across a process boundary through a
// Remote (in the process that owns the clock) and Follow (in the process
// that follows it: berth-kueue, which cannot be linked into berth). They
// speak in lines:
//
//	settle SEQ UNIXNANO [STREAM=WRITTEN ...]
//	settled SEQ NEXT
//
// The owner asks the follower to settle at the clock's time, naming how
// many bytes its API server has written to each of the follower's watch
// streams; the follower moves its own clock there (its due timers fire),
// reads its watches up to those counts, settles as a Driver settles, and
// answers with its soonest deadline (0: none). The owner counts the
// follower busy until it has answered for the clock's time, the API
// server's writes and its watch streams as they are now, and stops its
// clock at the follower's deadline.

// remoteSep separates a follower's name from its stream's number in the
// WatchHeader of a follower's watch.
const remoteSep = "/"

// Remote is a part of the cluster in another process that follows the
// clock (Follow): the clock's Driver waits for it to settle, and steps to
// its deadlines.
type Remote struct {
	name  string
	clock *Clock
	w     io.Writer

	mu sync.Mutex
	// seq numbers the queries; asked is the one outstanding, answered
	// the last the follower settled at.
	seq      uint64
	asked    *remoteState
	answered *remoteState
	// streams are the follower's watch streams, by number: the bytes the
	// API server has written to each.
	streams map[string]*atomic.Int64
	// next is a timer at the follower's soonest deadline.
	next clock.Timer
	// gone is set once the follower cannot be asked: it no longer holds
	// the clock (the cluster reports its exit).
	gone bool
}

// remoteState is what a follower settled at: the clock's time, the API
// server's writes and what it wrote to the follower's watches.
type remoteState struct {
	seq     uint64
	now     time.Time
	writes  uint64
	written map[string]int64
}

func (s *remoteState) same(o *remoteState) bool {
	return s != nil && o != nil && s.now.Equal(o.now) && s.writes == o.writes && maps.Equal(s.written, o.written)
}

// Remote registers a follower named name, asked through w; the caller
// passes each line the follower writes back to Answer, and calls Gone
// when it stops.
func (c *Clock) Remote(name string, w io.Writer) *Remote {
	r := &Remote{name: name, clock: c, w: w, streams: map[string]*atomic.Int64{}}
	c.activity.mu.Lock()
	if c.activity.remotes == nil {
		c.activity.remotes = map[string]*Remote{}
	}
	c.activity.remotes[name] = r
	c.activity.mu.Unlock()
	c.activity.Probe(name, r.busy)
	return r
}

// state is the moment as a follower must have settled at it.
func (r *Remote) state() *remoteState {
	s := &remoteState{now: r.clock.Now(), writes: r.clock.activity.mutations.Load(), written: make(map[string]int64, len(r.streams))}
	for id, n := range r.streams {
		s.written[id] = n.Load()
	}
	return s
}

// busy reports whether the follower has yet to settle at this moment,
// and asks it to when it has not been asked.
func (r *Remote) busy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return false
	}
	now := r.state()
	if now.same(r.answered) {
		return false
	}
	if !now.same(r.asked) {
		r.seq++
		now.seq = r.seq
		r.asked = now
		var b strings.Builder
		fmt.Fprintf(&b, "settle %d %d", now.seq, now.now.UnixNano())
		for id, n := range now.written {
			fmt.Fprintf(&b, " %s=%d", id, n)
		}
		Tracef("asking %s: %s", r.name, b.String())
		b.WriteByte('\n')
		if _, err := io.WriteString(r.w, b.String()); err != nil {
			r.gone = true
			return false
		}
	}
	return true
}

// Answer takes a line the follower wrote: its answer to a query, or
// anything else (false: not the Remote's).
func (r *Remote) Answer(line string) bool {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "settled" {
		return false
	}
	seq, err1 := strconv.ParseUint(f[1], 10, 64)
	next, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	Tracef("%s answered: %s", r.name, line)
	r.mu.Lock()
	if r.asked != nil && r.asked.seq == seq {
		r.answered, r.asked = r.asked, nil
		if r.next != nil {
			r.next.Stop()
			r.next = nil
		}
		if next != 0 {
			// A timer of the clock's own at the follower's deadline: the
			// clock stops there, and the moment's changed time asks the
			// follower to fire it.
			r.next = r.clock.newTimerOf(r.name, time.Unix(0, next).Sub(r.clock.Now()), nil, 0)
		}
	}
	r.mu.Unlock()
	r.clock.activity.touch()
	return true
}

// Gone says the follower stopped: it holds the clock no longer.
func (r *Remote) Gone() {
	r.mu.Lock()
	r.gone = true
	r.mu.Unlock()
	r.clock.activity.touch()
}

// stream is the byte count of a follower's watch stream.
func (r *Remote) stream(id string) *atomic.Int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.streams[id]
	if n == nil {
		n = &atomic.Int64{}
		r.streams[id] = n
	}
	return n
}

// remoteWatch is the byte count of the follower's watch stream a
// WatchHeader value names ("kueue/12"), or nil.
func (a *Activity) remoteWatch(header string) *atomic.Int64 {
	name, id, ok := strings.Cut(header, remoteSep)
	if !ok {
		return nil
	}
	a.mu.Lock()
	r := a.remotes[name]
	a.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.stream(id)
}

// Follow has clk follow a clock owned by another process: it reads the
// owner's queries from in and answers each on out once this process has
// settled at the query's time (see Remote). Its watches must carry the
// follower's name (Activity.Follows). It returns when in ends or ctx
// does.
func Follow(ctx context.Context, clk *Clock, in io.Reader, out io.Writer) error {
	a := clk.activity
	// The latest query: one still unanswered when a later one arrives
	// is answered by the later one's answer, which the owner waits for.
	var (
		mu     sync.Mutex
		latest string
		ended  error
	)
	arrived := make(chan struct{}, 1)
	go func() {
		s := bufio.NewScanner(in)
		s.Buffer(make([]byte, 64<<10), 4<<20)
		for s.Scan() {
			mu.Lock()
			latest = s.Text()
			mu.Unlock()
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
		mu.Lock()
		ended = s.Err()
		if ended == nil {
			ended = io.EOF
		}
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
	}()
	// The owner's written counts of this query: the follower is at work
	// until it has read as much of each stream still open.
	var want map[string]int64
	var wantMu sync.Mutex
	a.Probe("watch events the owner's API server sent", func() bool {
		wantMu.Lock()
		defer wantMu.Unlock()
		return a.behind(want)
	})
	d := NewDriver(clk)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-arrived:
		}
		mu.Lock()
		q, err := latest, ended
		latest = ""
		mu.Unlock()
		if q == "" {
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			continue
		}
		seq, at, written, perr := parseQuery(q)
		if perr != nil {
			return perr
		}
		Tracef("asked: %s", q)
		wantMu.Lock()
		want = written
		wantMu.Unlock()
		clk.Advance(at)
		for {
			if err := settleTraced(ctx, d, seq); err != nil {
				return err
			}
			if !clk.Due() {
				break
			}
			clk.FireDue()
		}
		var next int64
		if t, ok := clk.Next(); ok {
			next = t.UnixNano()
		}
		if _, err := fmt.Fprintf(out, "settled %d %d\n", seq, next); err != nil {
			return err
		}
	}
}

// settleTraced is d.Settle, saying in the trace what a long settle
// waits on.
func settleTraced(ctx context.Context, d *Driver, seq uint64) error {
	if !Tracing {
		return d.Settle(ctx)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Second):
				Tracef("settling for query %d: waiting on %s", seq, d.Waiting())
			}
		}
	}()
	return d.Settle(ctx)
}

func parseQuery(q string) (seq uint64, at time.Time, written map[string]int64, err error) {
	f := strings.Fields(q)
	if len(f) < 3 || f[0] != "settle" {
		return 0, time.Time{}, nil, fmt.Errorf("simtime: %q is not a query of the clock's owner", q)
	}
	seq, err = strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, time.Time{}, nil, fmt.Errorf("simtime: query %q: %w", q, err)
	}
	ns, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0, time.Time{}, nil, fmt.Errorf("simtime: query %q: %w", q, err)
	}
	written = map[string]int64{}
	for _, kv := range f[3:] {
		id, n, ok := strings.Cut(kv, "=")
		v, perr := strconv.ParseInt(n, 10, 64)
		if !ok || perr != nil {
			return 0, time.Time{}, nil, fmt.Errorf("simtime: query %q: %q is not STREAM=BYTES", q, kv)
		}
		written[id] = v
	}
	return seq, time.Unix(0, ns), written, nil
}

// Follows has this process's watches name their streams as follower
// name's, so that the owner's API server counts what it writes to them
// for the owner's Remote (Follow).
func (a *Activity) Follows(name string) {
	a.mu.Lock()
	a.follower = name
	a.mu.Unlock()
}

// behind reports whether a stream of this follower's still open has read
// less than want says the owner's server wrote to it.
func (a *Activity) behind(want map[string]int64) bool {
	if len(want) == 0 {
		return false
	}
	a.watches.mu.Lock()
	defer a.watches.mu.Unlock()
	for id, s := range a.watches.open {
		if w, ok := want[strconv.FormatUint(id, 10)]; ok && s.read.Load() < w {
			return true
		}
	}
	return false
}
