package store

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
	"sort"
	"strings"
	"syscall"

	"berth.io/berth/internal/problem"
)

// File is a store in a local directory: key a/b/c is the file DIR/a/b/c.
// Writes go to DIR/.tmp first and are renamed into place, so an object
// appears whole or not at all; Create links the finished file into place
// (link fails if the name is taken, atomically), and Replace holds an
// flock on DIR/.locks while it compares and renames.
type File struct {
	dir string
}

const (
	fileTmp   = ".tmp"
	fileLocks = ".locks"
)

// NewFile opens (creating) a directory store.
func NewFile(dir string) (*File, error) {
	if dir == "" {
		return nil, problem.New("name one, as file:///var/lib/models", "model store file://: no directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{abs, filepath.Join(abs, fileTmp), filepath.Join(abs, fileLocks)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, problem.Errorf("choose a directory you can write to", "model store file://%s: %w", abs, err)
		}
	}
	return &File{dir: abs}, nil
}

func (f *File) String() string { return "file://" + f.dir }

func (f *File) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasPrefix(key, ".") || strings.Contains(key, "..") || strings.Contains(key, "//") {
		return "", fmt.Errorf("model store %s: key %q is not a clean relative path", f, key)
	}
	return filepath.Join(f.dir, filepath.FromSlash(key)), nil
}

func notExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	return err
}

func (f *File) Open(_ context.Context, key string, offset int64) (io.ReadCloser, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil, notExist(err)
	}
	if offset > 0 {
		if _, err := fh.Seek(offset, io.SeekStart); err != nil {
			fh.Close()
			return nil, err
		}
	}
	return fh, nil
}

func (f *File) Stat(_ context.Context, key string) (Object, error) {
	p, err := f.path(key)
	if err != nil {
		return Object{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return Object{}, notExist(err)
	}
	return Object{Key: key, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

// temp writes r to a new file under DIR/.tmp, synced, and returns its
// path; the caller renames or removes it.
func (f *File) temp(r io.Reader, size int64) (string, error) {
	tmp, err := os.CreateTemp(filepath.Join(f.dir, fileTmp), "put-")
	if err != nil {
		return "", err
	}
	n, err := io.Copy(tmp, r)
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("wrote %d bytes, expected %d", n, size)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

func (f *File) place(tmp, p string, link bool) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		os.Remove(tmp)
		return err
	}
	if link {
		err := os.Link(tmp, p)
		os.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			return ErrExists
		}
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (f *File) Put(_ context.Context, key string, r io.Reader, size int64) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	tmp, err := f.temp(r, size)
	if err != nil {
		return fmt.Errorf("writing %s to %s: %w", key, f, err)
	}
	return f.place(tmp, p, false)
}

func etagOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

func (f *File) ReadAll(_ context.Context, key string) ([]byte, string, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, "", notExist(err)
	}
	return data, etagOf(data), nil
}

func (f *File) Create(_ context.Context, key string, data []byte) (string, error) {
	p, err := f.path(key)
	if err != nil {
		return "", err
	}
	tmp, err := f.temp(strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		return "", err
	}
	if err := f.place(tmp, p, true); err != nil {
		return "", err
	}
	return etagOf(data), nil
}

func (f *File) Replace(_ context.Context, key string, data []byte, etag string) (string, error) {
	p, err := f.path(key)
	if err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(f.dir, fileLocks, etagOf([]byte(key))), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	cur, err := os.ReadFile(p)
	if err != nil {
		return "", notExist(err)
	}
	if etagOf(cur) != etag {
		return "", ErrChanged
	}
	tmp, err := f.temp(strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		return "", err
	}
	if err := f.place(tmp, p, false); err != nil {
		return "", err
	}
	return etagOf(data), nil
}

func (f *File) List(_ context.Context, prefix string) ([]Object, error) {
	root := f.dir
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		root = filepath.Join(f.dir, filepath.FromSlash(prefix[:i]))
	}
	var out []Object
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(f.dir, p)
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && (key == fileTmp || key == fileLocks || !(strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // deleted while listing
		}
		out = append(out, Object{Key: key, Size: info.Size(), Modified: info.ModTime()})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, err
}

func (f *File) Delete(_ context.Context, key string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (f *File) Children(_ context.Context, prefix string) ([]string, error) {
	p, err := f.path(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, err
}
