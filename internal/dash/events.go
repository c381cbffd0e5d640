package dash

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// pageAll, among the pages a change names, means every page.
const pageAll = "all"

// hub fans the names of changed pages out to every open event stream.
type hub struct {
	mu sync.Mutex // guards subs
	// subs hold at most one pending notice each: a slow page that
	// missed some fetches its content once, with everything in it.
	subs map[chan []string]bool
}

func newHub() *hub { return &hub{subs: map[chan []string]bool{}} }

func (h *hub) subscribe() chan []string {
	ch := make(chan []string, 1)
	h.mu.Lock()
	h.subs[ch] = true
	h.mu.Unlock()
	return ch
}

func (h *hub) unsubscribe(ch chan []string) {
	h.mu.Lock()
	delete(h.subs, ch)
	h.mu.Unlock()
}

func (h *hub) publish(pages []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- pages:
		default:
			// One is pending: make it say every page.
			select {
			case <-ch:
			default:
			}
			ch <- []string{pageAll}
		}
	}
}

// heartbeat keeps an idle stream open through proxies and lets a page
// see a dead server within a few seconds.
const heartbeat = 10 * time.Second

// serveEvents is the server-sent event stream: a "changed" event whose
// data names the pages whose content changed. EventSource reconnects by
// itself when the server goes away; retry asks it to within a second.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	ch := s.hub.subscribe()
	defer s.hub.unsubscribe(ch)
	fmt.Fprint(w, "retry: 1000\n: connected\n\n")
	flusher.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case pages := <-ch:
			fmt.Fprintf(w, "event: changed\ndata: %s\n\n", strings.Join(pages, " "))
		case <-tick.C:
			fmt.Fprint(w, ": heartbeat\n\n")
		}
		flusher.Flush()
	}
}
