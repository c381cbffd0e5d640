// Package storetest is the conformance suite every model store passes:
// the filesystem store in internal/model and a real S3 server in
// test/s3. The same tests, so that the two stores cannot drift apart.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/internal/model/store"
)

// Config describes the store under test.
type Config struct {
	// New returns an empty store.
	New func(t *testing.T) store.Store
	// PartSize is the store's multipart part size (0 if it has none);
	// the suite puts an object of 2.5 parts.
	PartSize int64
}

// Run runs the store operations' tests.
func Run(t *testing.T, c Config) {
	ctx := context.Background()
	t.Run("PutOpenStat", func(t *testing.T) {
		s := c.New(t)
		data := random(t, 1<<20+17)
		if err := s.Put(ctx, "blobs/a", bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		o, err := s.Stat(ctx, "blobs/a")
		if err != nil || o.Size != int64(len(data)) {
			t.Fatalf("Stat = %+v, %v; want size %d", o, err, len(data))
		}
		for _, off := range []int64{0, 1, 1 << 19, int64(len(data)) - 1} {
			if got := read(t, s, "blobs/a", off); !bytes.Equal(got, data[off:]) {
				t.Errorf("Open at %d: got %d bytes, want the %d from there", off, len(got), len(data)-int(off))
			}
		}
		if _, err := s.Stat(ctx, "blobs/missing"); !errors.Is(err, store.ErrNotExist) {
			t.Errorf("Stat of a missing key = %v, want ErrNotExist", err)
		}
		if _, err := s.Open(ctx, "blobs/missing", 0); !errors.Is(err, store.ErrNotExist) {
			t.Errorf("Open of a missing key = %v, want ErrNotExist", err)
		}
	})
	t.Run("Multipart", func(t *testing.T) {
		if c.PartSize == 0 {
			t.Skip("the store has no parts")
		}
		s := c.New(t)
		data := random(t, int(c.PartSize*5/2))
		// A plain io.Reader (no ReaderAt, no Seek): the store must stream it.
		if err := s.Put(ctx, "blobs/big", io.MultiReader(bytes.NewReader(data)), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		if got := read(t, s, "blobs/big", 0); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, differing from the %d put", len(got), len(data))
		}
		if got := read(t, s, "blobs/big", c.PartSize+3); !bytes.Equal(got, data[c.PartSize+3:]) {
			t.Fatalf("ranged read across parts differs")
		}
	})
	t.Run("ListChildrenDelete", func(t *testing.T) {
		s := c.New(t)
		for _, k := range []string{"models/b/versions/HEAD", "models/a/versions/0000000001.json", "models/a/versions/0000000002.json", "models/a/aliases/prod/HEAD", "blobs/sha256/ff"} {
			if err := s.Put(ctx, k, bytes.NewReader([]byte(k)), int64(len(k))); err != nil {
				t.Fatal(err)
			}
		}
		objs, err := s.List(ctx, "models/a/versions/")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		if diff := cmp.Diff([]string{"models/a/versions/0000000001.json", "models/a/versions/0000000002.json"}, keys); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
		names, err := s.Children(ctx, "models/")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
			t.Errorf("Children (-want +got):\n%s", diff)
		}
		if err := s.Delete(ctx, "models/a/versions/0000000001.json"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "models/a/versions/0000000001.json"); err != nil {
			t.Errorf("deleting a missing key: %v, want no error", err)
		}
		if objs, _ := s.List(ctx, "models/a/versions/"); len(objs) != 1 {
			t.Errorf("after Delete, List = %v, want one key", objs)
		}
	})
	t.Run("CreateIfAbsent", func(t *testing.T) {
		s := c.New(t)
		if _, err := s.Create(ctx, "x/rec", []byte("first")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, "x/rec", []byte("second")); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second Create = %v, want ErrExists", err)
		}
		if got, _, _ := s.ReadAll(ctx, "x/rec"); string(got) != "first" {
			t.Errorf("after a refused Create the object holds %q, want %q", got, "first")
		}
	})
	t.Run("CreateRace", func(t *testing.T) {
		s := c.New(t)
		const n = 8
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Create(ctx, "x/race", []byte{byte('a' + i)})
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, store.ErrExists):
					t.Errorf("Create: %v", err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d of %d concurrent Creates won, want exactly 1", wins.Load(), n)
		}
	})
	t.Run("ReplaceIfMatch", func(t *testing.T) {
		s := c.New(t)
		etag, err := s.Create(ctx, "x/head", []byte(`{"seq":1}`))
		if err != nil {
			t.Fatal(err)
		}
		_, read1, err := s.ReadAll(ctx, "x/head")
		if err != nil || read1 != etag {
			t.Fatalf("ReadAll etag %q, %v; want the Create's %q", read1, err, etag)
		}
		etag2, err := s.Replace(ctx, "x/head", []byte(`{"seq":2}`), etag)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Replace(ctx, "x/head", []byte(`{"seq":3}`), etag); !errors.Is(err, store.ErrChanged) {
			t.Fatalf("Replace with a stale etag = %v, want ErrChanged", err)
		}
		if got, _, _ := s.ReadAll(ctx, "x/head"); string(got) != `{"seq":2}` {
			t.Errorf("object holds %s, want seq 2", got)
		}
		if _, err := s.Replace(ctx, "x/head", []byte(`{"seq":3}`), etag2); err != nil {
			t.Errorf("Replace with the current etag: %v", err)
		}
	})
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t *testing.T, s store.Store, key string, off int64) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), key, off)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cryptoRead(p []byte) (int, error) { return rand.Read(p) }
