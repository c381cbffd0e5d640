package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"berth.io/berth/internal/cluster/pki"
	"berth.io/berth/internal/problem"
)

// stateFormat marks a directory as a berth cluster's state; a directory
// without it (and not empty) is someone else's and is never touched.
const stateFormat = "berth.io/cluster-state/v1"

// State is a cluster's directory: etcd's data, the PKI, the kubeconfig, the
// log, the pid file and the lock that keeps two instances apart.
type State struct {
	Dir string
}

func (s State) path(name string) string { return filepath.Join(s.Dir, name) }

// Kubeconfig is the admin kubeconfig berth writes for the cluster.
func (s State) Kubeconfig() string { return s.path("kubeconfig") }

// LogFile receives the control plane's logs.
func (s State) LogFile() string { return s.path("berth.log") }

// PidFile holds the pid of the process serving the cluster.
func (s State) PidFile() string { return s.path("berth.pid") }

func (s State) etcdDir() string  { return s.path("etcd") }
func (s State) pki() pki.Dir     { return pki.At(s.path("pki")) }
func (s State) metaFile() string { return s.path("cluster.json") }
func (s State) lockFile() string { return s.path("lock") }

// meta is what a state directory remembers between starts.
type meta struct {
	Format         string    `json:"format"`
	Name           string    `json:"name"`
	Created        time.Time `json:"created"`
	APIServerPort  int       `json:"apiServerPort"`
	EtcdClientPort int       `json:"etcdClientPort"`
	EtcdPeerPort   int       `json:"etcdPeerPort"`
}

// Exists reports whether the directory holds a cluster's state.
func (s State) Exists() bool {
	_, err := os.Stat(s.metaFile())
	return err == nil
}

// readMeta loads the state's metadata. A missing file in an empty or
// absent directory is a new cluster (nil, nil); anything else that is not
// berth's is refused.
func (s State) readMeta() (*meta, error) {
	data, err := os.ReadFile(s.metaFile())
	if errors.Is(err, os.ErrNotExist) {
		entries, dirErr := os.ReadDir(s.Dir)
		if dirErr != nil && !errors.Is(dirErr, os.ErrNotExist) {
			return nil, fmt.Errorf("reading state directory %s: %w", s.Dir, dirErr)
		}
		for _, e := range entries {
			if e.Name() != "lock" && e.Name() != "berth.log" {
				return nil, problem.Errorf("pass --state-dir with an empty or new directory", "state directory %s is not empty and holds no berth cluster (no cluster.json); berth will not write into it", s.Dir)
			}
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.metaFile(), err)
	}
	var m meta
	if err := json.Unmarshal(data, &m); err != nil || m.Format != stateFormat {
		return nil, problem.Errorf(fmt.Sprintf("`berth down --purge --state-dir %s` removes it (its cluster is lost), or pass another --state-dir", s.Dir), "state directory %s is corrupt or was not written by this berth: %s does not hold %s", s.Dir, s.metaFile(), stateFormat)
	}
	return &m, nil
}

func (s State) writeMeta(m *meta) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.metaFile() + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.metaFile())
}

// lock takes the state directory for this process. The lock is an flock,
// so a crashed instance never leaves it held.
func (s State) lock() (release func(), err error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	f, err := os.OpenFile(s.lockFile(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		who := "another berth process"
		if pid, perr := s.Pid(); perr == nil {
			who = fmt.Sprintf("a running berth (pid %d)", pid)
		}
		return nil, problem.Errorf(fmt.Sprintf("stop it with `berth down --state-dir %s`, or use another --name or --state-dir", s.Dir), "state directory %s is in use by %s", s.Dir, who)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Running reports whether a process holds the state directory's lock.
func (s State) Running() bool {
	f, err := os.OpenFile(s.lockFile(), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// Pid is the pid recorded by the process serving the cluster.
func (s State) Pid() (int, error) {
	data, err := os.ReadFile(s.PidFile())
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// listen opens a loopback port, explaining a port already taken.
func listen(port int, what string) (net.Listener, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, problem.Errorf("stop that process, or start on another port with --port", "port %d on 127.0.0.1, wanted for the %s, is in use by another process", port, what)
		}
		return nil, fmt.Errorf("listening on 127.0.0.1:%d for the %s: %w", port, what, err)
	}
	return l, nil
}
