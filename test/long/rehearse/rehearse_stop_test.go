//go:build long

package rehearse_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/test/harness"
)

// aRehearsal is a berth rehearse process the test stops.
type aRehearsal struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	errOut harness.LockedBuffer
	home   string
	done   chan struct{}
}

// startRehearsal starts berth rehearse with its temporary directories in
// tmp and returns once its stderr has said mark: "Replaying" as the
// replay starts, " of trace, " on its first progress line.
func startRehearsal(t *testing.T, tmp, mark string, args ...string) *aRehearsal {
	t.Helper()
	r := &aRehearsal{home: t.TempDir(), done: make(chan struct{})}
	r.cmd = harness.Command(t, r.home, append([]string{"rehearse", "-o", "json"}, args...)...)
	r.cmd.Env = append(r.cmd.Env, "TMPDIR="+tmp)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.errOut
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	harness.Eventually(t, 3*time.Minute, "berth rehearse to say "+mark, func() (bool, error) {
		select {
		case <-r.done:
			return false, fmt.Errorf("berth rehearse exited before it said %q:\n%s", mark, r.errOut.String())
		default:
		}
		return strings.Contains(r.errOut.String(), mark), nil
	})
	return r
}

// stop sends sig and waits for the process to exit; it returns the exit
// code.
func (r *aRehearsal) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("berth rehearse still runs two minutes after %v:\n%s", sig, r.errOut.String())
	}
	return r.cmd.ProcessState.ExitCode()
}

// partialReport checks that the process printed a report marked partial.
func (r *aRehearsal) partialReport(t *testing.T) {
	t.Helper()
	var rep report.Report
	if err := json.Unmarshal(r.out.Bytes(), &rep); err != nil {
		t.Fatalf("no report after the signal: %v\nstdout:\n%s\nstderr:\n%s", err, r.out.String(), r.errOut.String())
	}
	if !rep.Partial {
		t.Errorf("the report after the signal is not marked partial")
	}
	if !strings.Contains(r.errOut.String(), "interrupted") {
		t.Errorf("stderr does not say the rehearsal was interrupted:\n%s", r.errOut.String())
	}
}

// leftBehind are the rehearsal directories under tmp, and a kubeconfig a
// rehearsal must never write.
func (r *aRehearsal) leftBehind(t *testing.T, tmp string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(tmp, "*berth-rehearse-*"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.home, "kubeconfig")); err == nil {
		dirs = append(dirs, filepath.Join(r.home, "kubeconfig"))
	}
	return dirs
}

// children are the processes whose parent is pid.
func children(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, path := range stats {
		if ppid, _, ok := procStat(path); ok && ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	_, state, ok := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	return ok && state != "Z"
}

// procStat reads a process's parent and state from /proc/PID/stat.
func procStat(path string) (ppid int, state string, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err == nil
}

// TestRehearseStopsCleanly stops real berth rehearse processes mid-replay
// and checks what they leave: SIGINT and SIGTERM stop the rehearsal with
// its report so far, marked partial, exit 130, and leave no rehearsal
// directory, child process (a --vs design's) or kubeconfig behind.
// SIGKILL cannot clean up: a --vs design's child is stopped by the
// kernel and cleans up itself; a killed rehearsal's own directory is
// removed by the next rehearsal, which says so.
func TestRehearseStopsCleanly(t *testing.T) {
	tmp := t.TempDir()
	one := []string{"-f", "testdata/rehearse-bounds.yaml", "--trace", "testdata/rehearse-bounds.csv", "--speed", "30"}
	two := append([]string{"--vs", "testdata/rehearse-a.yaml"}, one...)
	const underWay = " of trace, " // the first progress line

	clean := func(t *testing.T, r *aRehearsal, kids []int) {
		t.Helper()
		for _, kid := range kids {
			if alive(kid) {
				t.Errorf("child process %d still runs", kid)
			}
		}
		if left := r.leftBehind(t, tmp); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}

	t.Run("SIGINT", func(t *testing.T) {
		r := startRehearsal(t, tmp, underWay, two...)
		kids := children(t, r.cmd.Process.Pid)
		if len(kids) == 0 {
			t.Fatalf("berth rehearse --vs runs no child process")
		}
		if code := r.stop(t, syscall.SIGINT); code != 130 {
			t.Errorf("exit %d after SIGINT; want 130\n%s", code, r.errOut.String())
		}
		r.partialReport(t)
		clean(t, r, kids)
	})

	var killed []string
	t.Run("SIGKILL", func(t *testing.T) {
		r := startRehearsal(t, tmp, underWay, one...)
		if code := r.stop(t, syscall.SIGKILL); code == 0 {
			t.Errorf("exit 0 after SIGKILL")
		}
		killed = r.leftBehind(t, tmp)
		if len(killed) != 1 {
			t.Fatalf("a rehearsal killed with SIGKILL left %v; want its one directory", killed)
		}
	})

	// As soon as the replay starts: a report with nothing in it yet, but
	// a report, marked partial.
	t.Run("SIGTERM", func(t *testing.T) {
		r := startRehearsal(t, tmp, "Replaying", one...)
		for _, dir := range killed {
			if want := "Removed " + dir + ", left by a rehearsal that was killed"; !strings.Contains(r.errOut.String(), want) {
				t.Errorf("the next rehearsal does not say %q:\n%s", want, r.errOut.String())
			}
		}
		if code := r.stop(t, syscall.SIGTERM); code != 130 {
			t.Errorf("exit %d after SIGTERM; want 130\n%s", code, r.errOut.String())
		}
		r.partialReport(t)
		clean(t, r, nil)
	})

	t.Run("SIGKILL with --vs", func(t *testing.T) {
		r := startRehearsal(t, tmp, underWay, two...)
		kids := children(t, r.cmd.Process.Pid)
		if len(kids) == 0 {
			t.Fatalf("berth rehearse --vs runs no child process")
		}
		r.stop(t, syscall.SIGKILL)
		harness.Eventually(t, time.Minute, "the killed rehearsal's child to stop and clean up", func() (bool, error) {
			for _, kid := range kids {
				if alive(kid) {
					return false, nil
				}
			}
			left := r.leftBehind(t, tmp)
			return len(left) == 0, nil
		})
	})
}
