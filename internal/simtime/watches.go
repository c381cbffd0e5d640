package simtime

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// WatchHeader carries, from a counted client to the API server, the id
// of a watch stream whose bytes the Activity follows: a watch event the
// server has written and its client has not yet read is work on its way
// that no goroutine shows (it sits in a socket), and on a busy machine it
// can sit there longer than any quiet window.
const WatchHeader = "X-Berth-Watch-Stream"

// watchStreams are the open watch streams of counted clients.
type watchStreams struct {
	next atomic.Uint64
	mu   sync.Mutex
	open map[uint64]*watchStream
}

// watchStream is one watch's bytes: written by the server, read by its
// client. The server counts what it writes before it writes it, so a
// stream whose written is ahead of its read has an event on its way.
type watchStream struct {
	who           string
	written, read atomic.Int64
}

// openWatch registers a watch stream of a client.
func (a *Activity) openWatch(who string) (uint64, *watchStream) {
	s := &watchStream{who: who}
	id := a.watches.next.Add(1)
	a.watches.mu.Lock()
	if a.watches.open == nil {
		a.watches.open = map[uint64]*watchStream{}
	}
	a.watches.open[id] = s
	a.watches.mu.Unlock()
	return id, s
}

// closeWatch forgets a stream its client closed: what it did not read
// it will never read.
func (a *Activity) closeWatch(id uint64) {
	Tracef("watch %d closed", id)
	a.watches.mu.Lock()
	delete(a.watches.open, id)
	a.watches.mu.Unlock()
	a.touch()
}

// unreadWatch names a stream with bytes written and not read, or "".
func (a *Activity) unreadWatch() string {
	a.watches.mu.Lock()
	defer a.watches.mu.Unlock()
	for _, s := range a.watches.open {
		if s.written.Load() > s.read.Load() {
			return fmt.Sprintf("a watch event on its way to %s", s.who)
		}
	}
	return ""
}

// watchRoundTrip sends a watch request with its stream's id and follows
// what its client reads of the response.
func (a *Activity) watchRoundTrip(next http.RoundTripper, r *http.Request) (*http.Response, error) {
	id, s := a.openWatch(r.UserAgent())
	Tracef("watch %d opened by %s: %s?%s (%s)", id, r.UserAgent(), r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"))
	r = r.Clone(r.Context())
	header := strconv.FormatUint(id, 10)
	a.mu.Lock()
	if a.follower != "" {
		header = a.follower + remoteSep + header
	}
	a.mu.Unlock()
	r.Header.Set(WatchHeader, header)
	resp, err := next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		a.closeWatch(id)
		return resp, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, a: a, id: id, s: s}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	a    *Activity
	id   uint64
	s    *watchStream
	once sync.Once
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.s.read.Add(int64(n))
		b.a.touch()
	}
	return n, err
}

func (b *countedBody) Close() error {
	b.once.Do(func() { b.a.closeWatch(b.id) })
	return b.ReadCloser.Close()
}

// Unwrapper is a ResponseWriter that decorates another.
type Unwrapper interface {
	http.ResponseWriter
	Unwrap() http.ResponseWriter
}

// WatchWriter is w counting what the server writes to a watch stream a
// counted client opened (WatchHeader), or one of a Remote's, a follower
// in another process; false for any other request. It has only Write,
// WriteHeader and Unwrap: the server wraps it back
// (responsewriter.WrapForHTTP1Or2) for Flush and the rest.
func (a *Activity) WatchWriter(r *http.Request, w http.ResponseWriter) (Unwrapper, bool) {
	header := r.Header.Get(WatchHeader)
	if written := a.remoteWatch(header); written != nil {
		return &countedWriter{ResponseWriter: w, a: a, written: written}, true
	}
	id, err := strconv.ParseUint(header, 10, 64)
	if err != nil {
		return nil, false
	}
	a.watches.mu.Lock()
	s := a.watches.open[id]
	a.watches.mu.Unlock()
	if s == nil {
		return nil, false
	}
	return &countedWriter{ResponseWriter: w, a: a, written: &s.written}, true
}

type countedWriter struct {
	http.ResponseWriter
	a       *Activity
	written *atomic.Int64
}

func (w *countedWriter) Write(p []byte) (int, error) {
	w.written.Add(int64(len(p)))
	w.a.touch()
	n, err := w.ResponseWriter.Write(p)
	if n < len(p) {
		// What was not sent will not be read.
		w.written.Add(int64(n - len(p)))
	}
	return n, err
}

// Unwrap is the writer it decorates.
func (w *countedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
