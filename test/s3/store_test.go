package s3

import (
	"context"
	"path/filepath"
	"testing"

	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/model/storetest"
)

func s3Store(t *testing.T) store.Store { return newBucket(t, endpoint) }

func TestS3Store(t *testing.T) {
	storetest.Run(t, storetest.Config{New: s3Store, PartSize: partSize})
}

func TestS3Registry(t *testing.T) {
	storetest.RunRegistry(t, storetest.Config{New: s3Store, PartSize: partSize})
}

// TestS3PullResumesAfterCutConnection cuts the TCP connection in the middle
// of a download; the puller resumes with a ranged GET from where it
// stopped rather than starting again, and verifies the whole file.
func TestS3PullResumesAfterCutConnection(t *testing.T) {
	ctx := context.Background()
	direct := newBucket(t, endpoint)
	r := &model.Registry{Store: direct, User: "tester"}
	const size = 12 << 20 // more than two parts
	storetest.PushRandom(t, r, "reco", 1, size)

	viaProxy := openStore(t, proxy.addr, direct.String())
	pr := &model.Registry{Store: viaProxy, User: "tester"}
	// Resolve first, so that the only connection the proxy cuts is the
	// download's.
	v, err := pr.Resolve(ctx, model.Ref{Name: "reco"})
	if err != nil {
		t.Fatal(err)
	}
	proxy.down.Store(0)
	proxy.ranges.Store(0)
	proxy.arm(4 << 20)
	defer proxy.cutAt.Store(0)
	to := t.TempDir()
	res, err := pr.PullVersion(ctx, v, to, model.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.CheckDir(t, r, filepath.Join(to, "current"), 1)
	if proxy.ranges.Load() < 1 {
		t.Errorf("no ranged GET after the cut: the download started again instead of resuming")
	}
	if res.Fetched != size {
		t.Errorf("the puller counted %d bytes, want %d", res.Fetched, size)
	}
	if down := proxy.down.Load(); down > size+size/4 {
		t.Errorf("%d bytes crossed the connection for a %d-byte file: the cut part was fetched again", down, size)
	}
	t.Logf("%d bytes over the wire for a %d-byte file cut at 4 MiB", proxy.down.Load(), size)
}
