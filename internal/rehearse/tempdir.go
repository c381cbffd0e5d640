package rehearse

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tempPrefix names the directories rehearsals keep their clusters in.
const tempPrefix = "berth-rehearse-"

// ownerFile is the file in a rehearsal's directory that its process
// holds an flock on for as long as it runs, with its pid in it.
const ownerFile = "owner"

// TempDir makes a rehearsal's directory under parent (the system's
// temporary directory when empty), owned by this process until release:
// an flock held on its owner file says so to PruneStale, so that a
// rehearsal killed with SIGKILL, which cannot remove its directory, has
// it removed by the next. release removes the directory.
func TempDir(parent string) (dir string, release func(), err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	// Made under a hidden name and renamed once owned, so that PruneStale
	// never sees a directory whose owner has not taken it yet.
	hidden, err := os.MkdirTemp(parent, "."+tempPrefix)
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(hidden, ownerFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			_, err = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
		}
	}
	dir = filepath.Join(parent, strings.TrimPrefix(filepath.Base(hidden), "."))
	if err == nil {
		err = os.Rename(hidden, dir)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		os.RemoveAll(hidden)
		return "", nil, fmt.Errorf("making the rehearsal's directory: %w", err)
	}
	return dir, func() {
		os.RemoveAll(dir)
		f.Close()
	}, nil
}

// PruneStale removes the rehearsal directories under parent (the system's
// temporary directory when empty) whose process is gone: killed with
// SIGKILL, or by a machine that went down, before it could remove its
// own. A directory whose owner still runs holds its flock and is kept.
// A directory of an older berth (no owner file) is kept while its
// cluster holds its state lock, and for a minute after it was made (the
// lock's file comes a moment later). It returns the directories it
// removed.
func PruneStale(parent string) ([]string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(parent, tempPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		if !stale(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// stale reports whether dir's owner is gone.
func stale(dir string) bool {
	info, err := os.Lstat(dir)
	if err != nil || !info.IsDir() {
		return false
	}
	if held, ok := locked(filepath.Join(dir, ownerFile)); ok {
		return !held
	}
	// An older berth's directory: its cluster's state lock, held while
	// the cluster runs (absent until the cluster starts).
	if held, ok := locked(filepath.Join(dir, "lock")); ok && held {
		return false
	}
	return time.Since(info.ModTime()) > time.Minute
}

// locked reports whether another process holds an flock on path; ok is
// false when path cannot be opened.
func locked(path string) (held, ok bool) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true, true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, true
}
