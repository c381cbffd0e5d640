package storetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
)

// BenchModelSize is the model the throughput benchmarks move:
// $BERTH_BENCH_MODEL_MB mebibytes, else 256 MiB.
func BenchModelSize() int64 {
	if mb, err := strconv.Atoi(os.Getenv("BERTH_BENCH_MODEL_MB")); err == nil && mb > 0 {
		return int64(mb) << 20
	}
	return 256 << 20
}

// WriteModel writes a model of size bytes in files of at most 1 GiB, as
// sharded safetensors are, and returns its directory.
func WriteModel(b *testing.B, size int64) string {
	b.Helper()
	dir := b.TempDir()
	buf := make([]byte, 4<<20)
	for i := 0; size > 0; i++ {
		n := min(size, 1<<30)
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("model-%05d.safetensors", i)))
		if err != nil {
			b.Fatal(err)
		}
		for left := n; left > 0; left -= int64(len(buf)) {
			rand.Read(buf)
			if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
		size -= n
	}
	return dir
}

// BenchPush pushes a fresh model of BenchModelSize per iteration.
func BenchPush(b *testing.B, st func(b *testing.B) store.Store) {
	size := BenchModelSize()
	dir := WriteModel(b, size)
	r := &model.Registry{Store: st(b), User: "bench"}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		// A new store each time: a push of content already stored
		// uploads nothing.
		b.StopTimer()
		r.Store = st(b)
		b.StartTimer()
		if _, err := r.Push(context.Background(), "bench", dir, model.PushOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchPull pulls a model of BenchModelSize into a fresh directory per
// iteration.
func BenchPull(b *testing.B, st func(b *testing.B) store.Store) {
	size := BenchModelSize()
	dir := WriteModel(b, size)
	r := &model.Registry{Store: st(b), User: "bench"}
	if _, err := r.Push(context.Background(), "bench", dir, model.PushOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		to := filepath.Join(b.TempDir(), strconv.Itoa(i))
		if _, err := r.Pull(context.Background(), model.Ref{Name: "bench"}, to, model.PullOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(to)
		b.StartTimer()
	}
}

// BenchCopy is the physical limit: cp -r of the same model directory.
func BenchCopy(b *testing.B) {
	size := BenchModelSize()
	dir := WriteModel(b, size)
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		to := filepath.Join(b.TempDir(), strconv.Itoa(i))
		if out, err := exec.Command("cp", "-r", dir, to).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v: %s", err, out)
		}
		b.StopTimer()
		os.RemoveAll(to)
		b.StartTimer()
	}
}

// BenchCopyVerified is what a verified, durable copy costs with the
// usual tools: cp -r, sha256sum of every file, and sync of the copies.
func BenchCopyVerified(b *testing.B) {
	size := BenchModelSize()
	dir := WriteModel(b, size)
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		to := filepath.Join(b.TempDir(), strconv.Itoa(i))
		script := "cp -r \"$1\" \"$2\" && sha256sum \"$2\"/* >/dev/null && sync \"$2\"/*"
		if out, err := exec.Command("sh", "-c", script, "sh", dir, to).CombinedOutput(); err != nil {
			b.Fatalf("cp+sha256sum+sync: %v: %s", err, out)
		}
		b.StopTimer()
		os.RemoveAll(to)
		b.StartTimer()
	}
}

// Populate pushes n versions of a one-file model and moves alias n times
// (between two versions), as fast as the store allows.
func Populate(b *testing.B, r *model.Registry, n int) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "w"), []byte("weights"), 0o644)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	per := n / 8
	for w := range 8 {
		count := per
		if w == 7 {
			count = n - 7*per
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range count {
				if _, err := r.Push(ctx, "many", dir, model.PushOptions{Metrics: map[string]float64{"auc": 0.9}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	pushed := time.Since(start)
	start = time.Now()
	for i := range n {
		if _, err := r.Promote(ctx, "many", 1+i%2, "production", ""); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("populated %d versions in %s and %d alias moves in %s", n, pushed.Round(time.Millisecond), n, time.Since(start).Round(time.Millisecond))
}

// BenchListHistory lists the versions and the history of a registry that
// Populate filled with n of each. The first list after populating packs
// the pages; it is reported separately.
func BenchListHistory(b *testing.B, r *model.Registry, n int) {
	ctx := context.Background()
	for _, what := range []string{"list", "history"} {
		read := func() int {
			if what == "list" {
				vs, err := r.Versions(ctx, "many")
				if err != nil {
					b.Fatal(err)
				}
				return len(vs)
			}
			ms, err := r.History(ctx, "many", "production")
			if err != nil {
				b.Fatal(err)
			}
			return len(ms)
		}
		start := time.Now()
		if got := read(); got != n {
			b.Fatalf("%s returned %d, want %d", what, got, n)
		}
		first := time.Since(start)
		b.Run(what, func(b *testing.B) {
			b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
			for range b.N {
				read()
			}
		})
	}
}
