// Package dash serves `berth dash`: a read-only web view of a cluster
// that shows berth's own answers (the pools, quotas and classes `berth
// status` prints, the waits `berth why --all` explains, the autoscaler's
// and spot market's activity, scaled workloads, the model store's models
// and rehearsal reports),
// live. One informer cache says when something changed; the server then
// reads the cluster again as status and why do, and tells each open page
// over server-sent events to fetch its content again. Pages are Go
// templates, charts SVG drawn in Go, and every asset is embedded: nothing
// comes from a network, and no Secret is ever listed or read.
package dash

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/model"
)

// Options configure a Server.
type Options struct {
	// Client reads the cluster with the user's credentials.
	Client kubernetes.Interface
	// Blueprint gives pools their sizes, teams their quotas and classes,
	// as it does for `berth status`; nil: pools from node labels alone.
	Blueprint *v1alpha1.Blueprint
	// Context names the cluster in the page's header.
	Context string
	// Listen is the address the server is reached at (host:port); a
	// request whose Host or Origin names another host is refused.
	Listen string
	// Reports is the directory of `berth rehearse --report` output the
	// Rehearsals page lists; empty: none.
	Reports string
	// Models is the model registry the Models page lists; nil: none is
	// configured.
	Models *model.Registry
	// Settle is how long a change waits for the ones after it before the
	// cluster is read again; zero means 200ms.
	Settle time.Duration
	// Gap is the least time from the start of one reading of the cluster
	// to the start of the next, so that a cluster that changes all the
	// time is read once per Gap, not back to back; zero means 1s.
	Gap time.Duration
	// Probe is how often the API server is asked whether it is ready:
	// a cluster that stops tells the informers nothing, and the pages
	// should say it is gone. Zero means 5s.
	Probe time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is the dashboard. Its zero value is not usable: make one with
// New, start it with Run, serve Handler.
type Server struct {
	o     Options
	cache *watched
	hub   *hub
	pages *pageSet

	// dirty is signalled when the cache sees a change.
	dirty chan struct{}

	// mu guards snap and readErr.
	mu      sync.RWMutex
	snap    *snapshot
	readErr error
	// ready is closed when the first reading has ended, well or not.
	ready chan struct{}
	once  sync.Once

	hist history // the reading loop's alone
}

// snapshot is what the pages are rendered from: one reading and what was
// derived from it.
type snapshot struct {
	view      *View
	overview  Overview
	activity  []Entry
	workloads Workloads
	// sums are each page's rendered content's hash, to tell pages when
	// theirs changed.
	sums map[string][sha256.Size]byte
}

// New builds a Server; its informers start with Run.
func New(o Options) (*Server, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Settle == 0 {
		o.Settle = 200 * time.Millisecond
	}
	if o.Gap == 0 {
		o.Gap = time.Second
	}
	if o.Probe == 0 {
		o.Probe = 5 * time.Second
	}
	s := &Server{o: o, hub: newHub(), dirty: make(chan struct{}, 1), ready: make(chan struct{}), hist: history{}}
	var err error
	if s.pages, err = newPageSet(); err != nil {
		return nil, err
	}
	if s.cache, err = newWatched(o.Client, s.changed); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) changed() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

// Run starts the informers and reads the cluster after each change until
// ctx ends. A failed reading (the cluster stopped or restarting) is
// shown on the pages and tried again every second; the informers
// reconnect by themselves. A cluster that stops is found by a probe of
// its API server every Options.Probe.
func (s *Server) Run(ctx context.Context) {
	s.cache.factory.Start(ctx.Done())
	s.changed()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	probe := time.NewTicker(s.o.Probe)
	defer probe.Stop()
	var lastRead time.Time
	for {
		select {
		case <-ctx.Done():
			s.cache.factory.Shutdown()
			return
		case <-s.dirty:
		case <-retry.C:
		case <-probe.C:
			if s.healthy(ctx) {
				continue
			}
			// The reading below fails too, and the pages say why.
		}
		// Changes come in bursts (a Job: its pod, events, quota); one
		// reading after the burst shows them all, and never sooner than
		// Gap after the last.
		wait := max(s.o.Settle, time.Until(lastRead.Add(s.o.Gap)))
		select {
		case <-ctx.Done():
			continue
		case <-time.After(wait):
		}
		select {
		case <-s.dirty:
		default:
		}
		lastRead = time.Now()
		if err := s.refresh(ctx); err != nil {
			retry.Reset(time.Second)
		}
	}
}

// healthy asks the API server whether it is ready. A client with no
// REST client behind its discovery (a fake) is always healthy; so is a
// server whose last reading already failed, which the retry reads again.
func (s *Server) healthy(ctx context.Context) bool {
	s.mu.RLock()
	failed := s.readErr != nil
	s.mu.RUnlock()
	rc := s.o.Client.Discovery().RESTClient()
	if failed || rc == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return rc.Get().AbsPath("/readyz").Do(ctx).Error() == nil
}

// refresh reads the cluster, renders every page, and tells the open
// pages whose content changed.
func (s *Server) refresh(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), s.cache.synced...) {
		return ctx.Err()
	}
	now := s.o.Now()
	l := &cachedLister{api: listing.FromAPI(s.o.Client), pods: s.cache.pods, nodes: s.cache.nodes, events: s.cache.events}
	v, err := read(ctx, s.o.Client, l, s.o.Blueprint, now)
	if err != nil {
		s.mu.Lock()
		s.readErr = err
		s.mu.Unlock()
		s.once.Do(func() { close(s.ready) })
		s.hub.publish([]string{pageAll})
		return err
	}
	s.hist.add(now, v.Status.Scaled)
	snap := &snapshot{view: v, overview: overview(v), activity: activity(v, s.cache.events, s.cache.nodes),
		workloads: workloads(v, s.hist, s.cache.pdbs)}
	snap.sums = s.pages.sums(s, snap)
	s.mu.Lock()
	old, hadErr := s.snap, s.readErr != nil
	s.snap, s.readErr = snap, nil
	s.mu.Unlock()
	s.once.Do(func() { close(s.ready) })
	var changed []string
	for page, sum := range snap.sums {
		if old == nil || hadErr || old.sums[page] != sum {
			changed = append(changed, page)
		}
	}
	if len(changed) > 0 {
		s.hub.publish(changed)
	}
	return nil
}

// current is the latest snapshot (nil until a reading succeeds) and the
// error of the latest reading, if it failed. It waits for the first
// reading to end, at most until ctx does.
func (s *Server) current(ctx context.Context) (*snapshot, error) {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, fmt.Errorf("the cluster has not been read yet: %w", ctx.Err())
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.snap, s.readErr
}

// Handler serves the pages, their JSON, the event stream and the assets,
// refusing requests whose Host or Origin is not the server's.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	return guard(s.o.Listen, mux)
}
