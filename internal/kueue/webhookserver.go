package kueue

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// loopbackServer is the webhook server Kueue's manager runs: controller-
// runtime's webhook.Server on a listener berth opened on loopback (so
// the port is known before the webhook configurations name it), with a
// certificate berth issued, in place of its default server's fixed port
// and certificate directory.
type loopbackServer struct {
	ln  net.Listener
	tls *tls.Config
	mux *http.ServeMux

	mu      sync.Mutex
	paths   []string
	started chan struct{}
}

var _ webhook.Server = (*loopbackServer)(nil)

func newLoopbackServer(cert tls.Certificate) (*loopbackServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &loopbackServer{
		ln:      ln,
		tls:     &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		mux:     http.NewServeMux(),
		started: make(chan struct{}),
	}, nil
}

// URL is where the API server reaches the hook at path.
func (s *loopbackServer) URL(path string) string {
	return "https://" + s.ln.Addr().String() + path
}

// Paths are the paths hooks were registered at.
func (s *loopbackServer) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

func (s *loopbackServer) NeedLeaderElection() bool { return false }

func (s *loopbackServer) Register(path string, hook http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, path)
	s.mux.Handle(path, hook)
}

func (s *loopbackServer) Start(ctx context.Context) error {
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	close(s.started)
	if err := srv.Serve(tls.NewListener(s.ln, s.tls)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Started closes once the server answers.
func (s *loopbackServer) Started() <-chan struct{} { return s.started }

func (s *loopbackServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		select {
		case <-s.started:
			return nil
		default:
			return errors.New("Kueue's webhook server has not started")
		}
	}
}

func (s *loopbackServer) WebhookMux() *http.ServeMux { return s.mux }
