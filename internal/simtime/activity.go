package simtime

import (
	"fmt"
	"io"
	"net/http"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Activity says whether a cluster on a virtual clock is at work: the
// counters its parts keep (requests in flight, callbacks running), the
// probes they register (the scheduler's queue), and a count of every
// sign of life, so that a Driver can tell a quiet moment from a quiet
// window.
type Activity struct {
	// life counts every Begin, End and touch: unchanged across a window,
	// nothing counted started or stopped in it.
	life atomic.Uint64
	// own counts the clock's callbacks running.
	own Counter
	// refusedAt is the wall time (Unix nanoseconds) of the last request
	// refused in a way its client retries after a backoff on the wall
	// clock; refusals counts them.
	refusedAt atomic.Int64
	refusals  atomic.Int64
	// mutations counts the writes the API server has served: a write
	// sends watch events that may still be on their way to informers
	// when nothing else is at work; a read sends none.
	mutations atomic.Uint64
	// watches are counted clients' watch streams, whose events may be
	// in a socket between the server and the client.
	watches watchStreams
	// requests is the tally of the requests the API server served.
	requests Requests
	// late counts work that ended at a later moment of the clock than
	// it began (NoteLate).
	late atomic.Int64

	// mu guards the registered counters, probes and gates.
	mu       sync.Mutex
	counters []*Counter
	probes   []probe
	gates    []*Gate
	// holding is set while a Driver (or a follower) holds the gates: a
	// gate registered then holds from the start.
	holding bool
	// remotes are the parts in other processes that follow the clock
	// (Clock.Remote), by name; follower is the name this process
	// follows another's clock under (Follows).
	remotes  map[string]*Remote
	follower string
}

type probe struct {
	name string
	busy func() bool
}

// NewActivity returns an Activity with nothing registered.
func NewActivity() *Activity {
	a := &Activity{}
	a.own = Counter{name: "the clock's timer callbacks", a: a}
	a.counters = []*Counter{&a.own}
	return a
}

// Counter is work of one kind in flight.
type Counter struct {
	name string
	a    *Activity
	n    atomic.Int64
}

// Begin counts one more piece of work in flight.
func (c *Counter) Begin() {
	c.n.Add(1)
	c.a.life.Add(1)
}

// End counts one piece of work done.
func (c *Counter) End() {
	c.n.Add(-1)
	c.a.life.Add(1)
}

// Wrote notes a write (a request that may change objects) served.
func (c *Counter) Wrote() {
	c.a.mutations.Add(1)
	c.a.life.Add(1)
}

// Refused notes work of this kind refused in a way that its client will
// retry after a backoff of its own, on the wall clock (an update that
// conflicted, a create the quota refused): a Driver waits out its grace
// after it, so that the retry comes at the same moment of the clock.
func (c *Counter) Refused() {
	c.a.refusedAt.Store(time.Now().UnixNano())
	c.a.refusals.Add(1)
	c.a.life.Add(1)
}

// RoundTripper counts each request sent through next as work of c's
// kind, from when it is sent until its response arrives: on a client,
// it covers the time a request spends on the wire, where no goroutine
// of the process is at work on it. Watches, which do not end while the
// cluster waits, and the node leases' renewals, made on the wall clock,
// are not counted.
func (c *Counter) RoundTripper(next http.RoundTripper) http.RoundTripper {
	return roundTripper{c: c, next: next}
}

type roundTripper struct {
	c    *Counter
	next http.RoundTripper
}

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if !Counted(r) {
		if isWatch(r) && !isLease(r) {
			return t.c.a.watchRoundTrip(t.next, r)
		}
		return t.next.RoundTrip(r)
	}
	t.c.Begin()
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		t.c.End()
		return resp, err
	}
	// The request is work until its client has the whole response: the
	// body may still be on its way when the headers are in.
	resp.Body = &endOnClose{ReadCloser: resp.Body, c: t.c}
	return resp, nil
}

// endOnClose ends its Counter's count when its body has been read to the
// end or closed, whichever comes first.
type endOnClose struct {
	io.ReadCloser
	c    *Counter
	once sync.Once
}

func (b *endOnClose) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.c.End)
	}
	return n, err
}

func (b *endOnClose) Close() error {
	b.once.Do(b.c.End)
	return b.ReadCloser.Close()
}

// OnClockAgent marks, in a client's User-Agent, a client whose component
// retries a refused request on the rehearsal's clock (the Job controller
// running on it, berth's controllers, KWOK): the clock need not hold for
// the wall-time backoff of a refusal such a client gets by quota or
// admission.
const OnClockAgent = "retries-on-rehearsal-clock"

// RetriesOnClock reports whether a request's client retries a refusal on
// the rehearsal's clock (OnClockAgent).
func RetriesOnClock(r *http.Request) bool { return strings.Contains(r.UserAgent(), OnClockAgent) }

// Counted says whether a request to the API server is work a rehearsal's
// clock waits for: any but a watch and a node lease's renewal.
func Counted(r *http.Request) bool { return !isWatch(r) && !isLease(r) }

func isWatch(r *http.Request) bool {
	return r.URL.Query().Get("watch") == "true" || strings.Contains(r.URL.Path, "/watch/")
}

func isLease(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/")
}

// InFlight is the work of this kind begun and not ended.
func (c *Counter) InFlight() int64 { return c.n.Load() }

// Counter registers a counter of work named name ("requests to the API
// server"), for a Driver to wait on.
func (a *Activity) Counter(name string) *Counter {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &Counter{name: name, a: a}
	a.counters = append(a.counters, c)
	return c
}

// Probe registers a function that says whether a part is at work that
// no counter sees (a scheduler with pods in its active queue).
func (a *Activity) Probe(name string, busy func() bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.probes = append(a.probes, probe{name, busy})
}

func (a *Activity) begin() { a.own.Begin() }
func (a *Activity) end()   { a.own.End() }
func (a *Activity) touch() { a.life.Add(1) }

// sinceRefusal is how long ago the last refusal was, in wall time; a
// very long time when there was none.
func (a *Activity) sinceRefusal() time.Duration {
	at := a.refusedAt.Load()
	if at == 0 {
		return time.Duration(1<<63 - 1)
	}
	return time.Since(time.Unix(0, at))
}

// Requests is the tally of the requests the API server on the clock
// served, which its handler keeps.
func (a *Activity) Requests() *Requests { return &a.requests }

// NoteLate counts work found to have ended at a later moment of the
// clock than it began, what names it: the clock stepped while it was
// under way, which it should not (something in it waited where the
// Driver could not see). A component that can tell keeps its own
// timing right (the Job controller's queue counts a retry from the
// moment its sync began) and notes it here, for the report.
func (a *Activity) NoteLate(what string) {
	a.late.Add(1)
	Tracef("late: %s", what)
}

// Late counts the work NoteLate was told of.
func (a *Activity) Late() int64 { return a.late.Load() }

// Refusals counts the refusals so far.
func (a *Activity) Refusals() int64 { return a.refusals.Load() }

// Life is a count of every sign of life so far: two equal readings mean
// nothing counted started or ended between them.
func (a *Activity) Life() uint64 { return a.life.Load() }

// Busy names what is at work now among the counters and probes, or ""
// when nothing is.
func (a *Activity) Busy() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.counters {
		if n := c.n.Load(); n != 0 {
			return fmt.Sprintf("%s (%d)", c.name, n)
		}
	}
	for _, p := range a.probes {
		if p.busy() {
			return p.name
		}
	}
	return a.unreadWatch()
}

// holdGates has every gate hold work for a Driver, or let it through.
func (a *Activity) holdGates(on bool) {
	a.mu.Lock()
	a.holding = on
	gates := append([]*Gate(nil), a.gates...)
	a.mu.Unlock()
	for _, g := range gates {
		g.hold(on)
	}
}

// openGate lets one piece of work through the first gate that has some
// waiting, and reports whether it did; it names a gate whose component
// has work pending but is not at its gate, as busy.
func (a *Activity) openGate() (opened bool, busy string) {
	a.mu.Lock()
	gates := append([]*Gate(nil), a.gates...)
	a.mu.Unlock()
	for _, g := range gates {
		o, b := g.open()
		if o {
			return true, ""
		}
		if b {
			busy = g.name
		}
	}
	return false, busy
}

// goroutineSamples are the Go runtime's counts of goroutines by state.
var goroutineSamples = []string{
	"/sched/goroutines/running:goroutines",
	"/sched/goroutines/runnable:goroutines",
	"/sched/goroutines/not-in-go:goroutines",
}

// runtimeState reads the runtime's counts of running, runnable and
// in-syscall goroutines.
type runtimeState struct {
	samples []metrics.Sample
}

func newRuntimeState() *runtimeState {
	s := &runtimeState{}
	for _, name := range goroutineSamples {
		s.samples = append(s.samples, metrics.Sample{Name: name})
	}
	return s
}

// read returns the counts of running, runnable and not-in-Go goroutines.
func (s *runtimeState) read() (running, runnable, notInGo uint64) {
	metrics.Read(s.samples)
	v := func(i int) uint64 {
		if s.samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s.samples[i].Value.Uint64()
	}
	return v(0), v(1), v(2)
}

// describe lists counters with work in flight, for a Driver's report of
// a settle that takes long.
func (a *Activity) describe() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for _, c := range a.counters {
		if n := c.n.Load(); n != 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", c.name, n))
		}
	}
	for _, p := range a.probes {
		if p.busy() {
			parts = append(parts, p.name)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
