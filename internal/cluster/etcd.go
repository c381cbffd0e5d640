package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/server/egressselector"
)

// startEtcd runs an embedded single-member etcd on loopback with its data
// in dir. Fsync stays on unless unsafeNoFsync is set: a laptop cluster
// should survive a power cut as well as a real one.
func startEtcd(dir string, clientPort, peerPort int, logFile string, unsafeNoFsync bool) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "berth"
	cfg.Dir = dir
	client := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(clientPort)}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{logFile}
	cfg.EnableGRPCGateway = false
	cfg.UnsafeNoFsync = unsafeNoFsync
	// Room for the scalability envelope (150,000 pods) without hitting
	// etcd's 2 GiB default.
	cfg.QuotaBackendBytes = 8 << 30
	// A single member elects itself when its election timer fires, after
	// a random 1-10 heartbeats with the defaults (100 ms and 1 s): 0.1 to
	// 1 s of every start spent waiting. The intervals exist for peers on a
	// network, and there are none; a tenth of the defaults keeps their
	// ratio and brings the wait under 0.1 s.
	cfg.TickMs, cfg.ElectionMs = 10, 100

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd did not become ready in 60s; see %s", logFile)
	}
}

// etcdInMemory serves etcd's gRPC API, beside its loopback port, on a
// listener in the process's memory, for the API server of a cluster on
// a rehearsal's clock. Over loopback, a watch event etcd sends the API
// server's watch cache sits in a socket between two goroutines, where
// neither the clock's counters nor the Go runtime see it, and the clock
// would step past it if it sat there longer than a quiet window (a busy
// machine's scheduler can keep it there for tens of milliseconds): the
// cache, and every watcher behind it, would learn of a write a moment of
// the clock late. In memory, the byte that etcd writes makes the API
// server's reading goroutine runnable at once, which the clock's Driver
// sees. Its stop closes the listener and the server.
type etcdInMemory struct {
	ln     *bufconn.Listener
	server *grpc.Server
}

// etcdInMemoryBuffer is each direction's buffer of a connection, made
// when it is dialed (the API server dials one per storage): a writer
// with more to say waits for its reader, which the clock sees as running.
const etcdInMemoryBuffer = 32 << 10

func serveEtcdInMemory(e *embed.Etcd) *etcdInMemory {
	m := &etcdInMemory{ln: bufconn.Listen(etcdInMemoryBuffer), server: v3rpc.Server(e.Server, nil, nil)}
	go m.server.Serve(m.ln)
	return m
}

// lookup is the API server's dialer to etcd (its storage transport's
// EgressLookup): every connection, whatever the address, is to m.
func (m *etcdInMemory) lookup(egressselector.NetworkContext) (utilnet.DialFunc, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) { return m.ln.DialContext(ctx) }, nil
}

func (m *etcdInMemory) stop() {
	m.server.Stop()
	m.ln.Close()
}
