package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/problem"
)

// BlobKey is where a file with digest sha256:<hex> is stored.
func BlobKey(digest string) string {
	return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:")
}

// Meter counts bytes moved, for progress lines. Its zero value is ready.
type Meter struct {
	Done  atomic.Int64
	Total atomic.Int64
}

func (m *Meter) reader(r io.Reader) io.Reader {
	if m == nil {
		return r
	}
	return &meterReader{r: r, m: m}
}

type meterReader struct {
	r io.Reader
	m *Meter
}

func (c *meterReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.m.Done.Add(int64(n))
	return n, err
}

// PushOptions describe a version being pushed.
type PushOptions struct {
	Metrics map[string]float64
	Params  map[string]string
	// Source is where the model came from: a git commit, a training run.
	Source string
	// Parallel is how many files upload at once. Zero means 4.
	Parallel int
	// Meter, when set, counts the bytes uploaded (and those already
	// stored, which are skipped).
	Meter *Meter
}

// PushResult says what a push stored.
type PushResult struct {
	Version *Version
	// Uploaded is the bytes sent; Reused the bytes of files the store
	// already held (identical content is stored once).
	Uploaded, Reused int64
}

// Push stores the file or directory at path as the model's next version.
// Files stream from disk; none is held in memory.
func (r *Registry) Push(ctx context.Context, name, path string, o PushOptions) (*PushResult, error) {
	if err := CheckName("model", name); err != nil {
		return nil, err
	}
	files, err := scan(path)
	if err != nil {
		return nil, err
	}
	v := &Version{Model: name, Metrics: o.Metrics, Params: o.Params, Source: o.Source, CreatedBy: r.user(), Created: r.now(), FileCount: len(files)}
	for _, f := range files {
		v.Size += f.size
	}
	if o.Meter != nil {
		o.Meter.Total.Store(v.Size)
	}
	res := &PushResult{Version: v}
	v.Files = make([]File, len(files))
	par := o.Parallel
	if par <= 0 {
		par = 4
	}
	var (
		wg       sync.WaitGroup
		sem      = make(chan struct{}, par)
		errs     = make([]error, len(files))
		sentAll  = make([]bool, len(files))
		uploaded atomic.Int64
		reused   atomic.Int64
	)
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			digest, sent, err := r.pushFile(ctx, f, o.Meter)
			if err != nil {
				errs[i] = fmt.Errorf("pushing %s: %w", f.abs, err)
				return
			}
			v.Files[i] = File{Path: f.rel, Size: f.size, Digest: digest}
			sentAll[i] = sent
			if sent {
				uploaded.Add(f.size)
			} else {
				reused.Add(f.size)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res.Uploaded, res.Reused = uploaded.Load(), reused.Load()

	l := r.versions(name)
	n, err := l.head(ctx)
	if err != nil {
		return nil, err
	}
	for {
		v.Version = n + 1
		err := l.create(ctx, v.Version, v)
		if errors.Is(err, store.ErrExists) {
			n++ // someone else pushed this number first
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("recording %s: %w", v.Ref(), err)
		}
		break
	}
	// A gc running since we found a blob already stored may have deleted
	// it as unreferenced; now that the manifest references it, put it
	// back.
	for i, f := range files {
		if sentAll[i] {
			continue
		}
		if _, err := r.Store.Stat(ctx, BlobKey(v.Files[i].Digest)); errors.Is(err, store.ErrNotExist) {
			if _, _, err := r.pushFile(ctx, f, nil); err != nil {
				return nil, fmt.Errorf("restoring %s for %s: %w", f.abs, v.Ref(), err)
			}
		}
	}
	return res, nil
}

type localFile struct {
	abs, rel string
	size     int64
}

// scan lists the regular files under path (or path itself), with paths
// relative to it.
func scan(path string) ([]localFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, problem.Errorf("give the model's file or directory", "model path: %w", err)
	}
	if !fi.IsDir() {
		return []localFile{{abs: path, rel: filepath.Base(path), size: fi.Size()}}, nil
	}
	var out []localFile
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		info, err := os.Stat(p) // follows symlinks
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(path, p)
		out = append(out, localFile{abs: p, rel: filepath.ToSlash(rel), size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading model directory %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, problem.Errorf("point at the directory with the model's weights and config", "model directory %s holds no files", path)
	}
	return out, nil
}

// pushFile hashes a file and uploads it unless the store already has its
// content. It reports whether it uploaded.
func (r *Registry) pushFile(ctx context.Context, f localFile, m *Meter) (string, bool, error) {
	fh, err := os.Open(f.abs)
	if err != nil {
		return "", false, err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", false, err
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	key := BlobKey(digest)
	if o, err := r.Store.Stat(ctx, key); err == nil && o.Size == f.size {
		if m != nil {
			m.Done.Add(f.size)
		}
		return digest, false, nil
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		return "", false, err
	}
	var body io.Reader = fh
	if m != nil {
		// Keep the *os.File visible to the S3 client, which uploads
		// parts in parallel from an io.ReaderAt.
		body = &meteredFile{File: fh, m: m}
	}
	if err := r.Store.Put(ctx, key, body, f.size); err != nil {
		return "", false, err
	}
	return digest, true, nil
}

// meteredFile counts what is read from a file, by Read or ReadAt.
type meteredFile struct {
	*os.File
	m *Meter
}

func (f *meteredFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.m.Done.Add(int64(n))
	return n, err
}

func (f *meteredFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.m.Done.Add(int64(n))
	return n, err
}
