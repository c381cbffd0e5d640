package cluster

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
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
