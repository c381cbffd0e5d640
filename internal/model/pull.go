package model

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"berth.io/berth/internal/problem"
)

// The puller's directory:
//
//	DIR/current            symlink to versions/N, swapped atomically
//	DIR/versions/N/        a complete, verified version
//	DIR/.partial/N/        a download in progress, kept to resume
//
// A version directory appears (by rename) only once every file in it has
// the digest the manifest names, and current moves only to such a
// directory, by renaming a new symlink over it: a reader that resolves
// current once sees one whole version, old or new.

// PullOptions tune a pull.
type PullOptions struct {
	// Parallel is how many files download at once. Zero means 4.
	Parallel int
	// Retries is how many times a file's download resumes after a
	// failure before the pull gives up. Zero means 5.
	Retries int
	// Meter, when set, counts the bytes fetched.
	Meter *Meter
}

// PullResult is what a pull did.
type PullResult struct {
	Version *Version
	// Previous is the version current pointed to before (0 if none).
	Previous int
	// Fetched is the bytes downloaded; Resumed the bytes a previous,
	// interrupted pull had already fetched.
	Fetched, Resumed int64
	// Swapped says current was moved.
	Swapped bool
}

// Current is the version DIR/current points to (0 when none).
func Current(dir string) int {
	target, err := os.Readlink(filepath.Join(dir, "current"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(filepath.Base(target))
	return n
}

// Pull fetches the version ref names into dir and makes it current.
func (r *Registry) Pull(ctx context.Context, ref Ref, dir string, o PullOptions) (*PullResult, error) {
	v, err := r.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return r.PullVersion(ctx, v, dir, o)
}

// PullVersion fetches a resolved version into dir and makes it current.
func (r *Registry) PullVersion(ctx context.Context, v *Version, dir string, o PullOptions) (*PullResult, error) {
	res := &PullResult{Version: v, Previous: Current(dir)}
	name := strconv.Itoa(v.Version)
	final := filepath.Join(dir, "versions", name)
	if _, err := os.Stat(final); err != nil {
		if err := r.fetch(ctx, v, dir, o, res); err != nil {
			return res, err
		}
	}
	if res.Previous != v.Version {
		if err := swap(dir, "versions/"+name); err != nil {
			return res, fmt.Errorf("making %s current in %s: %w", v.Ref(), dir, err)
		}
		res.Swapped = true
	}
	prune(dir, v.Version, res.Previous)
	return res, nil
}

func (r *Registry) fetch(ctx context.Context, v *Version, dir string, o PullOptions, res *PullResult) error {
	partial := filepath.Join(dir, ".partial", strconv.Itoa(v.Version))
	if err := os.MkdirAll(partial, 0o755); err != nil {
		return problem.Errorf("give --to a directory you can write to", "pull target %s: %w", dir, err)
	}
	if o.Meter != nil {
		o.Meter.Total.Store(v.Size)
	}
	par, retries := o.Parallel, o.Retries
	if par <= 0 {
		par = 4
	}
	if retries <= 0 {
		retries = 5
	}
	var (
		wg               sync.WaitGroup
		sem              = make(chan struct{}, par)
		errs             = make([]error, len(v.Files))
		fetched, resumed atomic.Int64
	)
	for i, f := range v.Files {
		clean := path.Clean(f.Path)
		if clean != f.Path || strings.HasPrefix(clean, "../") || clean == ".." || path.IsAbs(clean) || clean == "." {
			return fmt.Errorf("%s lists file %q, which is not a clean relative path; refusing to write outside %s", v.Ref(), f.Path, dir)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			got, had, err := r.fetchFile(ctx, f, filepath.Join(partial, filepath.FromSlash(f.Path)), retries, o.Meter)
			fetched.Add(got)
			resumed.Add(had)
			if err != nil {
				errs[i] = fmt.Errorf("%s: file %s: %w", v.Ref(), f.Path, err)
			}
		}()
	}
	wg.Wait()
	res.Fetched, res.Resumed = fetched.Load(), resumed.Load()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "versions"), 0o755); err != nil {
		return err
	}
	final := filepath.Join(dir, "versions", strconv.Itoa(v.Version))
	if err := os.Rename(partial, final); err != nil {
		if _, serr := os.Stat(final); serr == nil {
			return os.RemoveAll(partial) // another puller finished it first
		}
		return err
	}
	os.Remove(filepath.Join(dir, ".partial")) // only if no other pull is under way
	return syncDir(filepath.Join(dir, "versions"))
}

// CorruptError is a file whose content does not match its digest. It
// comes as the Err of a problem whose fix says what to do.
type CorruptError struct {
	Path, Want, Got string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("content has digest sha256:%s, the manifest says %s: the stored object is corrupt or was replaced; nothing was made current", e.Got, e.Want)
}

// fetchFile downloads one file to dst, resuming from what dst already
// holds, and verifies its digest. It returns the bytes fetched now and
// those found from an earlier attempt.
func (r *Registry) fetchFile(ctx context.Context, f File, dst string, retries int, m *Meter) (fetched, had int64, err error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, 0, err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return 0, 0, err
	}
	defer out.Close()
	h := sha256.New()
	have, err := io.Copy(h, out) // re-hash what an earlier attempt wrote
	if err != nil {
		return 0, 0, err
	}
	if have > f.Size {
		if err := restart(out, h); err != nil {
			return 0, 0, err
		}
		have = 0
	}
	had = have
	if m != nil {
		m.Done.Add(have)
	}
	var lastErr error
	for attempt := 0; have < f.Size; attempt++ {
		if attempt > retries {
			return fetched, had, fmt.Errorf("gave up after %d attempts, %d of %d bytes fetched (run the pull again to resume): %w", attempt, have, f.Size, lastErr)
		}
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fetched, had, ctx.Err()
			case <-time.After(time.Duration(attempt*attempt) * 100 * time.Millisecond):
			}
		}
		n, err := r.copyFrom(ctx, f, have, out, h, m)
		have += n
		fetched += n
		if err != nil {
			if ctx.Err() != nil {
				return fetched, had, ctx.Err()
			}
			lastErr = err
			continue
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); "sha256:"+got != f.Digest || have != f.Size {
		out.Close()
		os.Remove(dst)
		return fetched, had, problem.Errorf("push the model again from its source, or pull another version", "%w", &CorruptError{Path: f.Path, Want: f.Digest, Got: got})
	}
	return fetched, had, out.Sync()
}

// copyFrom appends the blob from offset to out, hashing as it goes, and
// returns how many bytes it appended.
func (r *Registry) copyFrom(ctx context.Context, f File, offset int64, out *os.File, h hash.Hash, m *Meter) (int64, error) {
	rc, err := r.Store.Open(ctx, BlobKey(f.Digest), offset)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	// Never take more than the manifest's size: a longer object is as
	// corrupt as a shorter one.
	src := io.LimitReader(m.reader(rc), f.Size-offset)
	ah := newAsyncHash(h)
	n, err := io.CopyBuffer(io.MultiWriter(out, ah), src, make([]byte, 1<<20))
	ah.wait()
	return n, err
}

// asyncHash feeds a hash from its own goroutine, so that hashing a chunk
// overlaps reading and writing the next: sha256 is the slowest of the
// three, and a file's hash cannot be split.
type asyncHash struct {
	h    hash.Hash
	ch   chan []byte
	free chan []byte
	done chan struct{}
}

func newAsyncHash(h hash.Hash) *asyncHash {
	a := &asyncHash{h: h, ch: make(chan []byte, 3), free: make(chan []byte, 4), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			a.h.Write(b)
			select {
			case a.free <- b:
			default: // enough spare buffers
			}
		}
	}()
	return a
}

func (a *asyncHash) Write(p []byte) (int, error) {
	var b []byte
	select {
	case b = <-a.free:
	default:
	}
	b = append(b[:0], p...)
	a.ch <- b
	return len(p), nil
}

// wait returns once every byte written has been hashed.
func (a *asyncHash) wait() {
	close(a.ch)
	<-a.done
}

func restart(out *os.File, h hash.Hash) error {
	h.Reset()
	if err := out.Truncate(0); err != nil {
		return err
	}
	_, err := out.Seek(0, io.SeekStart)
	return err
}

// swap points dir/current at target by renaming a new symlink over it.
func swap(dir, target string) error {
	var b [6]byte
	rand.Read(b[:])
	tmp := filepath.Join(dir, ".current-"+hex.EncodeToString(b[:]))
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "current")); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// prune removes versions other than current and the one before it, which
// readers that resolved current before the swap may still be reading.
func prune(dir string, current, previous int) {
	entries, err := os.ReadDir(filepath.Join(dir, "versions"))
	if err != nil {
		return
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == current || n == previous {
			continue
		}
		os.RemoveAll(filepath.Join(dir, "versions", e.Name()))
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Watch keeps dir on the version ref names: it pulls now, then every
// interval, and each time the reference moves it pulls, verifies and
// swaps. Errors go to report and the watch goes on; it ends with ctx.
func (r *Registry) Watch(ctx context.Context, ref Ref, dir string, interval time.Duration, o PullOptions, report func(*PullResult, error)) {
	for {
		res, err := r.Pull(ctx, ref, dir, o)
		if ctx.Err() != nil {
			return
		}
		report(res, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
