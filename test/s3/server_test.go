// Package s3 runs berth's model store and registry tests against a real
// S3 server on loopback: versitygw's gateway over its posix backend,
// embedded in the test process.
//
// It is a module of its own so that versitygw's requirements (newer
// golang.org/x/* than Kubernetes v1.36 is built with) never reach berth's
// own build; run it from this directory with `go test ./...`.
package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"

	"berth.io/berth/internal/model/store"
)

const (
	access = "berth-test"
	secret = "berth-test-secret"
	// partSize is S3's smallest multipart part, so that the tests cross
	// part boundaries with little data.
	partSize = 5 << 20
)

// endpoint is the gateway's host:port; proxy is a TCP proxy in front of
// it that the tests can cut.
var (
	endpoint string
	proxy    *cutProxy
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "berth-s3-")
	if err != nil {
		log.Fatal(err)
	}
	be, err := posix.New(dir, meta.XattrMeta{}, posix.PosixOpts{NewDirPerm: 0o755, Concurrency: 64})
	if err != nil {
		log.Fatalf("versitygw posix backend in %s (it needs user xattrs): %v", dir, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	endpoint = ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- embedgw.RunVersityGW(ctx, be, &embedgw.Config{
			RootUserAccess: access, RootUserSecret: secret, Region: "us-east-1",
			Ports: []string{endpoint}, MaxConnections: 256, MaxRequests: 256, MultipartMaxParts: 10000,
			Quiet: true, KeepAlive: true,
		})
	}()
	if err := waitReady(done); err != nil {
		log.Fatalf("versitygw did not start on %s: %v", endpoint, err)
	}
	if proxy, err = newCutProxy(endpoint); err != nil {
		log.Fatal(err)
	}
	code := m.Run()
	cancel()
	os.RemoveAll(dir)
	os.Exit(code)
}

func waitReady(done chan error) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return err
		default:
		}
		if c, err := net.Dial("tcp", endpoint); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("timed out")
}

// newBucket makes a fresh bucket and returns a store on it under a prefix,
// reached through addr (the gateway, or the proxy).
func newBucket(t testing.TB, addr string) *store.S3 {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	bucket := "berth-" + hex.EncodeToString(b[:])
	mc, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatalf("making bucket %s: %v", bucket, err)
	}
	return openStore(t, addr, "s3://"+bucket+"/models")
}

func openStore(t testing.TB, addr, url string) *store.S3 {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("S3_ENDPOINT", "http://"+addr)
	cfg, err := store.S3ConfigFromEnv(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, test := t.(*testing.T); test {
		cfg.PartSize = partSize // benchmarks keep berth's default
	}
	s, err := store.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cutProxy forwards TCP connections to the gateway and, when armed, cuts
// each response after a number of bytes, as a dropped connection does.
type cutProxy struct {
	addr    string
	cutAt   atomic.Int64 // bytes of a response after which to cut; 0: never
	cuts    atomic.Int32 // how many more connections to cut
	down    atomic.Int64 // bytes sent to clients
	ranges  atomic.Int32 // requests that asked for a Range
	gen     atomic.Int64 // bumped by arm
	backend string
}

func newCutProxy(backend string) (*cutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cutProxy{addr: ln.Addr().String(), backend: backend}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p, nil
}

func (p *cutProxy) serve(client net.Conn) {
	defer client.Close()
	up, err := net.Dial("tcp", p.backend)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				if strings.Contains(strings.ToLower(string(buf[:n])), "\r\nrange: bytes=") {
					p.ranges.Add(1)
				}
				up.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	// Arming applies to connections already open too: the client keeps
	// them alive across requests.
	var gen, sent int64
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			if g := p.gen.Load(); g != gen {
				gen, sent = g, 0
			}
			if at := p.cutAt.Load(); at > 0 && sent+int64(n) > at && p.cuts.Add(-1) >= 0 {
				n = int(at - sent)
				client.Write(buf[:n])
				p.down.Add(int64(n))
				return // cut
			}
			client.Write(buf[:n])
			sent += int64(n)
			p.down.Add(int64(n))
		}
		if err != nil {
			return
		}
	}
}

// arm cuts the next response carrying more than at bytes, once.
func (p *cutProxy) arm(at int64) {
	p.cuts.Store(1)
	p.cutAt.Store(at)
	p.gen.Add(1)
}
