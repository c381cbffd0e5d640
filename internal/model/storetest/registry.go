package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/problem"
)

// RunRegistry runs the registry and puller tests on the store.
func RunRegistry(t *testing.T, c Config) {
	ctx := context.Background()
	newReg := func(t *testing.T) *model.Registry {
		clock := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		return &model.Registry{Store: c.New(t), User: "tester", Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(time.Second)
			return clock
		}}
	}

	t.Run("PushStoresIdenticalFilesOnce", func(t *testing.T) {
		r := newReg(t)
		dir := ModelDir(t, map[string]string{"config.json": "{}", "weights/a.bin": "AAAA", "weights/b.bin": "AAAA"})
		res, err := r.Push(ctx, "reco", dir, model.PushOptions{Metrics: map[string]float64{"auc": 0.91}, Source: "git:abc123"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Version.Version != 1 || res.Version.FileCount != 3 || res.Version.Size != 10 {
			t.Errorf("pushed %+v, want version 1 of 3 files, 10 bytes", res.Version)
		}
		blobs, _ := r.Store.List(ctx, "blobs/")
		if len(blobs) != 2 {
			t.Errorf("store holds %d blobs, want 2 (a.bin and b.bin are identical)", len(blobs))
		}
		res2, err := r.Push(ctx, "reco", dir, model.PushOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res2.Version.Version != 2 || res2.Uploaded != 0 || res2.Reused != 10 {
			t.Errorf("second push: version %d, uploaded %d, reused %d; want version 2, nothing uploaded, 10 bytes reused", res2.Version.Version, res2.Uploaded, res2.Reused)
		}
		v, err := r.Resolve(ctx, model.Ref{Name: "reco", Version: 1})
		if err != nil {
			t.Fatal(err)
		}
		if v.Metrics["auc"] != 0.91 || v.Source != "git:abc123" || v.CreatedBy != "tester" || len(v.Files) != 3 {
			t.Errorf("version 1 reads back as %+v", v)
		}
		if _, err := r.Resolve(ctx, model.Ref{Name: "reco", Version: 9}); err == nil || !strings.Contains(err.Error(), "the latest is 2") {
			t.Errorf("resolving a missing version: %v, want an error naming the latest", err)
		}
	})

	t.Run("ConcurrentPromotions", func(t *testing.T) {
		r := newReg(t)
		for range 3 {
			PushRandom(t, r, "reco", 1)
		}
		if _, err := r.Promote(ctx, "reco", 1, "production", "first"); err != nil {
			t.Fatal(err)
		}
		// Both read the alias before either writes its move: the store
		// holds each move's write until both have arrived.
		gate := &GateStore{Store: r.Store, Match: "/aliases/production/0", N: 2}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, v := range []int{2, 3} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rr := *r
				rr.Store = gate
				rr.User = fmt.Sprintf("engineer-%d", v)
				_, errs[i] = rr.Promote(ctx, "reco", v, "production", "")
			}()
		}
		wg.Wait()
		var wins, losses int
		var conflict *model.ConflictError
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case errors.As(err, &conflict):
				losses++
				if p, ok := problem.As(err); !ok || !strings.Contains(p.Fix, "berth model history reco --alias production") {
					t.Errorf("the loser's error %q does not say how to carry on", err)
				}
			default:
				t.Fatalf("promotion failed otherwise: %v", err)
			}
		}
		if wins != 1 || losses != 1 {
			t.Fatalf("%d promotions won and %d lost, want 1 and 1: %v", wins, losses, errs)
		}
		hist, err := r.History(ctx, "reco", "production")
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 2 || hist[1].To != conflict.Winner.To || hist[1].From != 1 {
			t.Fatalf("history %+v, want the first move and exactly the winner's (to %d)", hist, conflict.Winner.To)
		}
		if !strings.Contains(conflict.Error(), conflict.Winner.By) || !strings.Contains(conflict.Error(), fmt.Sprint(conflict.Winner.To)) {
			t.Errorf("the loser's error does not name the winner: %v", conflict)
		}
	})

	t.Run("RollbackIsAMoveWithHistory", func(t *testing.T) {
		r := newReg(t)
		for range 3 {
			PushRandom(t, r, "reco", 1)
		}
		for _, v := range []int{1, 2, 3} {
			if _, err := r.Promote(ctx, "reco", v, "production", ""); err != nil {
				t.Fatal(err)
			}
		}
		var got []int
		for range 2 {
			m, err := r.Rollback(ctx, "reco", "production", "")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.To)
		}
		if diff := cmp.Diff([]int{2, 1}, got); diff != "" {
			t.Errorf("two rollbacks went to (-want +got):\n%s", diff)
		}
		if _, err := r.Rollback(ctx, "reco", "production", ""); err == nil {
			t.Errorf("rolling back past the first move succeeded")
		}
		hist, _ := r.History(ctx, "reco", "production")
		var moves []string
		for _, m := range hist {
			moves = append(moves, fmt.Sprintf("%d->%d", m.From, m.To))
		}
		if diff := cmp.Diff([]string{"0->1", "1->2", "2->3", "3->2", "2->1"}, moves); diff != "" {
			t.Errorf("history (-want +got):\n%s", diff)
		}
		m, _ := r.Alias(ctx, "reco", "production")
		if m.To != 1 {
			t.Errorf("alias points to %d, want 1", m.To)
		}
	})

	t.Run("ListAcrossPages", func(t *testing.T) {
		r := newReg(t)
		dir := ModelDir(t, map[string]string{"w": "x"})
		for range 205 {
			if _, err := r.Push(ctx, "many", dir, model.PushOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 { // the second reads the packed pages the first wrote
			vs, err := r.Versions(ctx, "many")
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != 205 || vs[0].Version != 1 || vs[204].Version != 205 || vs[7].Files != nil {
				t.Fatalf("listed %d versions, want 1..205 as summaries", len(vs))
			}
		}
		if pages, _ := r.Store.List(ctx, "models/many/versions/packed/"); len(pages) != 2 {
			t.Errorf("%d packed pages, want 2 (versions 1-100 and 101-200)", len(pages))
		}
	})

	t.Run("GCKeepsAliasTargets", func(t *testing.T) {
		r := newReg(t)
		for range 6 {
			PushRandom(t, r, "reco", 2)
		}
		r.Promote(ctx, "reco", 1, "production", "")
		r.Promote(ctx, "reco", 2, "staging", "")
		res, err := r.GC(ctx, "reco", model.GCOptions{Keep: 2, Window: 1})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{3, 4}, res.Deleted); diff != "" {
			t.Errorf("gc deleted (-want +got):\n%s", diff)
		}
		vs, _ := r.Versions(ctx, "reco")
		var live []int
		for _, v := range vs {
			live = append(live, v.Version)
		}
		if diff := cmp.Diff([]int{1, 2, 5, 6}, live); diff != "" {
			t.Errorf("after gc (-want +got):\n%s", diff)
		}
		if res.Blobs != 4 {
			t.Errorf("gc deleted %d blobs, want 4 (two files of versions 3 and 4 each)", res.Blobs)
		}
		if _, err := r.Resolve(ctx, model.Ref{Name: "reco", Version: 3}); err == nil || !strings.Contains(err.Error(), "deleted by berth model gc") {
			t.Errorf("resolving a collected version: %v", err)
		}
		if v := PushRandom(t, r, "reco", 1); v != 7 {
			t.Errorf("the push after gc got version %d, want 7 (numbers are never reused)", v)
		}
	})

	t.Run("PullVerifiesAndSwaps", func(t *testing.T) {
		r := newReg(t)
		PushRandom(t, r, "reco", 3)
		PushRandom(t, r, "reco", 3)
		to := t.TempDir()
		res, err := r.Pull(ctx, model.Ref{Name: "reco", Version: 1}, to, model.PullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Swapped || model.Current(to) != 1 {
			t.Fatalf("after pulling 1, current is %d", model.Current(to))
		}
		CheckDir(t, r, filepath.Join(to, "current"), 1)
		res, err = r.Pull(ctx, model.Ref{Name: "reco"}, to, model.PullOptions{})
		if err != nil || res.Previous != 1 || model.Current(to) != 2 {
			t.Fatalf("pulling the latest: %v; current %d", err, model.Current(to))
		}
		CheckDir(t, r, filepath.Join(to, "current"), 2)
	})

	t.Run("CorruptObjectNeverCurrent", func(t *testing.T) {
		r := newReg(t)
		PushRandom(t, r, "reco", 2)
		PushRandom(t, r, "reco", 2)
		to := t.TempDir()
		if _, err := r.Pull(ctx, model.Ref{Name: "reco", Version: 1}, to, model.PullOptions{}); err != nil {
			t.Fatal(err)
		}
		v2, _ := r.Version(ctx, "reco", 2)
		f := v2.Files[1]
		bad := bytes.Repeat([]byte{'!'}, int(f.Size))
		if err := r.Store.Put(ctx, model.BlobKey(f.Digest), bytes.NewReader(bad), f.Size); err != nil {
			t.Fatal(err)
		}
		_, err := r.Pull(ctx, model.Ref{Name: "reco", Version: 2}, to, model.PullOptions{})
		var corrupt *model.CorruptError
		if !errors.As(err, &corrupt) {
			t.Fatalf("pulling a corrupt object: %v, want a CorruptError", err)
		}
		if p, ok := problem.As(err); !ok || !strings.Contains(p.Fix, "push the model again") {
			t.Errorf("pulling a corrupt object: %q, want a problem whose fix is to push again", err)
		}
		if model.Current(to) != 1 {
			t.Errorf("current is %d after a corrupt pull, want 1 untouched", model.Current(to))
		}
		if _, err := os.Stat(filepath.Join(to, "versions", "2")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("versions/2 exists after a corrupt pull")
		}
		CheckDir(t, r, filepath.Join(to, "current"), 1)
	})

	t.Run("PullResumesAfterCut", func(t *testing.T) {
		r := newReg(t)
		PushRandom(t, r, "reco", 1, 3<<20)
		cut := &CutStore{Store: r.Store, After: 1 << 20, Cuts: 2}
		rr := *r
		rr.Store = cut
		to := t.TempDir()
		res, err := rr.Pull(ctx, model.Ref{Name: "reco"}, to, model.PullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Fetched != 3<<20 || cut.Opens.Load() != 3 {
			t.Errorf("fetched %d bytes in %d requests, want %d in 3 (two cut, each resumed where it stopped)", res.Fetched, cut.Opens.Load(), 3<<20)
		}
		CheckDir(t, r, filepath.Join(to, "current"), 1)
	})

	t.Run("ReadersNeverSeeAMix", func(t *testing.T) {
		r := newReg(t)
		const swaps = 10
		want := map[string]int{} // the sorted file digests of each version
		for v := 1; v <= swaps+1; v++ {
			PushRandom(t, r, "reco", 4, 256<<10)
			full, _ := r.Version(ctx, "reco", v)
			var ds []string
			for _, f := range full.Files {
				ds = append(ds, f.Path+"="+strings.TrimPrefix(f.Digest, "sha256:"))
			}
			sort.Strings(ds)
			want[strings.Join(ds, ",")] = v
		}
		to := t.TempDir()
		if _, err := r.Pull(ctx, model.Ref{Name: "reco", Version: 1}, to, model.PullOptions{}); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var reads, seen atomic.Int64
		var readerErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			last := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := HashDir(filepath.Join(to, "current"))
				if errors.Is(err, fs.ErrNotExist) {
					continue // pruned two swaps later while we read: start again
				}
				if err != nil {
					readerErr = err
					return
				}
				v, ok := want[got]
				if !ok {
					readerErr = fmt.Errorf("a reader saw a model that is no version: %s", got)
					return
				}
				if v < last {
					readerErr = fmt.Errorf("a reader saw version %d after %d", v, last)
					return
				}
				if v != last {
					seen.Add(1)
				}
				last = v
				reads.Add(1)
			}
		}()
		for v := 2; v <= swaps+1; v++ {
			for n := reads.Load(); reads.Load() < n+3; {
				time.Sleep(time.Millisecond)
			}
			if _, err := r.Pull(ctx, model.Ref{Name: "reco", Version: v}, to, model.PullOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for n := reads.Load(); reads.Load() < n+3 && readerErr == nil; {
			time.Sleep(time.Millisecond)
		}
		close(stop)
		<-done
		if readerErr != nil {
			t.Fatal(readerErr)
		}
		if seen.Load() != swaps+1 {
			t.Errorf("the reader saw %d versions over %d reads, want all %d", seen.Load(), reads.Load(), swaps+1)
		}
		t.Logf("%d whole-model reads during %d swaps", reads.Load(), swaps)
	})
}

// ModelDir writes files (path → content) into a new directory.
func ModelDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// PushRandom pushes a version of n random files (of size bytes each,
// default 1 KiB) and returns its number.
func PushRandom(t testing.TB, r *model.Registry, name string, n int, size ...int) int {
	t.Helper()
	sz := 1 << 10
	if len(size) > 0 {
		sz = size[0]
	}
	files := map[string]string{}
	for i := range n {
		b := make([]byte, sz)
		if _, err := io.ReadFull(randReader{}, b); err != nil {
			t.Fatal(err)
		}
		files[fmt.Sprintf("part-%d.bin", i)] = string(b)
	}
	res, err := r.Push(context.Background(), name, ModelDir(t, files), model.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Version.Version
}

type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return cryptoRead(p) }

// HashDir resolves dir once (a symlink such as current) and hashes every
// file under what it points to, as "path=hex" sorted and joined by ",".
func HashDir(dir string) (string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	var out []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel)+"="+hex.EncodeToString(h.Sum(nil)))
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, ","), err
}

// CheckDir fails unless dir holds exactly version v's files.
func CheckDir(t testing.TB, r *model.Registry, dir string, v int) {
	t.Helper()
	full, err := r.Version(context.Background(), "reco", v)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range full.Files {
		want = append(want, f.Path+"="+strings.TrimPrefix(f.Digest, "sha256:"))
	}
	sort.Strings(want)
	got, err := HashDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != strings.Join(want, ",") {
		t.Fatalf("%s does not hold version %d:\n got %s\nwant %s", dir, v, got, strings.Join(want, ","))
	}
}

// CutStore cuts the first Cuts downloads after After bytes, as a dropped
// connection does.
type CutStore struct {
	store.Store
	After int64
	Cuts  int32
	Opens atomic.Int32
}

func (c *CutStore) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	rc, err := c.Store.Open(ctx, key, offset)
	if err != nil {
		return nil, err
	}
	if n := c.Opens.Add(1); n > c.Cuts {
		return rc, nil
	}
	return &cutReader{rc: rc, left: c.After}, nil
}

type cutReader struct {
	rc   io.ReadCloser
	left int64
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("connection reset by peer (cut by the test)")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cutReader) Close() error { return c.rc.Close() }

// GateStore holds the first N Creates of keys containing Match until all N
// have arrived, then lets them race.
type GateStore struct {
	store.Store
	Match string
	N     int
	mu    sync.Mutex
	n     int
	open  chan struct{}
}

func (g *GateStore) Create(ctx context.Context, key string, data []byte) (string, error) {
	if strings.Contains(key, g.Match) {
		g.mu.Lock()
		if g.open == nil {
			g.open = make(chan struct{})
		}
		g.n++
		open := g.open
		if g.n == g.N {
			close(open)
		}
		g.mu.Unlock()
		select {
		case <-open:
		case <-time.After(10 * time.Second):
			return "", errors.New("gate: the other writer never came")
		}
	}
	return g.Store.Create(ctx, key, data)
}
