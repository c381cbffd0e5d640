package simtime

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A watch event the server has written and its client has not read is
// work on its way: the Activity is busy until the client reads it, and
// forgets a stream its client closed.
func TestWatchEventInASocketIsWork(t *testing.T) {
	a := NewActivity()
	sent := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw, ok := a.WatchWriter(r, w)
		if !ok {
			t.Errorf("the server did not know the watch of a counted client")
			return
		}
		io.WriteString(cw, `{"type":"ADDED"}`+"\n")
		w.(http.Flusher).Flush()
		close(sent)
		<-r.Context().Done()
	}))
	defer srv.Close()
	client := &http.Client{Transport: a.Counter("requests").RoundTripper(http.DefaultTransport)}
	resp, err := client.Get(srv.URL + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	<-sent
	if got := a.Busy(); !strings.Contains(got, "a watch event on its way") {
		t.Fatalf("busy %q with an event unread; want the watch named", got)
	}
	buf := make([]byte, 64)
	deadline := time.Now().Add(5 * time.Second)
	for read := 0; read < len(`{"type":"ADDED"}`+"\n") && time.Now().Before(deadline); {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	if got := a.Busy(); got != "" {
		t.Errorf("busy %q once the client read the event; want idle", got)
	}
	resp.Body.Close()
	if n := len(a.watches.open); n != 0 {
		t.Errorf("%d streams open after the client closed its watch; want 0", n)
	}
}

// A request that is no watch, or a watch of a client that does not
// count, is left alone.
func TestWatchWriterKnowsOnlyCountedWatches(t *testing.T) {
	a := NewActivity()
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=true", nil)
	if _, ok := a.WatchWriter(r, httptest.NewRecorder()); ok {
		t.Errorf("a watch with no stream id was counted")
	}
	r.Header.Set(WatchHeader, "17")
	if _, ok := a.WatchWriter(r, httptest.NewRecorder()); ok {
		t.Errorf("a watch with an unknown stream id was counted")
	}
}

// A counted request is work until its client has read the whole
// response: the body can still be on its way when the headers are in.
func TestARequestIsWorkUntilItsBodyIsRead(t *testing.T) {
	a := NewActivity()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, `{"kind":"Pod"}`)
	}))
	defer srv.Close()
	client := &http.Client{Transport: a.Counter("requests").RoundTripper(http.DefaultTransport)}
	resp, err := client.Get(srv.URL + "/api/v1/namespaces/a/pods/p")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Busy(); got == "" {
		t.Fatalf("idle with the headers in and the body on its way; want the request counted")
	}
	close(release)
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	if got := a.Busy(); got != "" {
		t.Errorf("busy %q once the body was read; want idle", got)
	}
	resp.Body.Close()
	if got := a.Busy(); got != "" {
		t.Errorf("busy %q after the body was closed too; want the count ended once", got)
	}
}
