// Package harness is what berth's test packages on a real cluster share:
// a test binary that doubles as the berth command, so a test drives the
// real command line without linking a second binary, and a wait on a
// condition in place of a fixed sleep.
//
// The quick tier (test/e2e) and the long tier (test/long/...) both use
// it; it imports the command line, so only test packages import it.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/cli"
	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/rehearse/report"
)

// asCLI in the environment makes the test binary act as berth.
const asCLI = "BERTH_E2E_AS_CLI"

// Main is a test package's TestMain: a cluster's child process when a
// cluster of this binary started it (cluster.Child: a storage driver's),
// the berth command line when the binary was started by Command, else
// run(m) as the package's tests.
func Main(m *testing.M, run func(*testing.M) int) {
	cluster.Child()
	if os.Getenv(asCLI) == "1" {
		// As cmd/berth does.
		root := cli.NewRootCommand(context.Background(), cli.StdStreams())
		root.SetArgs(os.Args[1:])
		os.Exit(cli.Exit(os.Stderr, root.Execute()))
	}
	os.Exit(run(m))
}

// Command is berth ARGS as a process of its own (this test binary,
// acting as berth) with BERTH_HOME home and the kubeconfig in it.
func Command(t testing.TB, home string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), asCLI+"=1", "BERTH_HOME="+home, "KUBECONFIG="+filepath.Join(home, "kubeconfig"))
	return cmd
}

// Berth runs berth ARGS and returns its output and error together, and
// its exit code.
func Berth(t testing.TB, home string, args ...string) (string, int) {
	t.Helper()
	return BerthIn(t, "", home, args...)
}

// BerthIn is Berth run in the directory dir ("" for the test's own).
func BerthIn(t testing.TB, dir, home string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := run(t, dir, home, &out, &out, args...)
	return out.String(), code
}

// BerthOut is Berth with its output apart from its errors, for output
// a program reads (-o json).
func BerthOut(t testing.TB, home string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t, "", home, &out, &errOut, args...)
	return out.String(), errOut.String(), code
}

// MustBerth is Berth that fails the test unless berth exits 0.
func MustBerth(t testing.TB, home string, args ...string) string {
	t.Helper()
	out, code := Berth(t, home, args...)
	if code != 0 {
		t.Fatalf("berth %s exited %d:\n%s%s", strings.Join(args, " "), code, out, controlPlaneLog(out))
	}
	return out
}

// controlPlaneLog is the end of the log a failed `berth up -d` names
// ("(the control plane's log: PATH)"): the test's temporary directory,
// where it lives, is gone once the test ends.
func controlPlaneLog(out string) string {
	_, rest, ok := strings.Cut(out, "(the control plane's log: ")
	if !ok {
		return ""
	}
	path, _, _ := strings.Cut(rest, ")")
	b, err := os.ReadFile(path)
	if err != nil {
		return "\n(the control plane's log: " + err.Error() + ")"
	}
	const tail = 8000
	if len(b) > tail {
		b = b[len(b)-tail:]
	}
	return "\n--- the end of " + path + ":\n" + string(b)
}

func run(t testing.TB, dir, home string, stdout, stderr io.Writer, args ...string) int {
	t.Helper()
	cmd := Command(t, home, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running berth %v: %v", args, err)
	}
	return 0
}

// Eventually polls cond every 100 ms until it holds, and fails the test
// if timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond()
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// LockedBuffer is a buffer one goroutine writes (a command's output)
// while another reads it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// DashURL is the line `berth dash` prints once it serves.
var DashURL = regexp.MustCompile(`Dashboard: (http://\S+)`)

// Dash runs `berth dash --listen 127.0.0.1:0 ARGS` in a process of
// its own, as a user runs it, until the test ends, and returns the
// address it prints.
func Dash(t testing.TB, home string, args ...string) string {
	t.Helper()
	cmd := Command(t, home, append([]string{"dash", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := DashURL.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(time.Minute):
		t.Fatal("berth dash printed no address within a minute")
	}
	panic("unreachable")
}

// Holds polls cond every 100 ms for the window and fails the test the
// first time it does not hold: for what must not happen (a queue that
// drains with no workers, a node past a limit), which no event ends.
func Holds(t testing.TB, window time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(window)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("checking that %s: %v", what, err)
		}
		if !ok {
			t.Fatalf("%s held for %s of %s, then stopped", what, window-time.Until(deadline), window)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// KeepCoresBusy starts a busy loop per core in processes of their own,
// as another user's work would load the machine; stop ends them.
func KeepCoresBusy(t testing.TB) (stop func()) {
	t.Helper()
	var loops []*exec.Cmd
	stop = func() {
		for _, c := range loops {
			c.Process.Kill()
			c.Wait()
		}
		loops = nil
	}
	t.Cleanup(stop)
	for range runtime.NumCPU() {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatalf("starting a busy loop: %v", err)
		}
		loops = append(loops, c)
	}
	return stop
}

// Template writes berth's blueprint template name (berth init
// --template) to a file of the test's and returns its path.
func Template(t testing.TB, name string) string {
	t.Helper()
	raw, err := blueprint.Template(name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "berth.yaml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Rehearse runs berth rehearse -o json with args and reads its report;
// the rehearsal's progress goes to the test's log.
func Rehearse(t testing.TB, args ...string) *report.Report {
	t.Helper()
	r, _ := RehearseProgress(t, args...)
	return r
}

// RehearseProgress is Rehearse, and the progress it printed.
func RehearseProgress(t testing.TB, args ...string) (*report.Report, string) {
	t.Helper()
	out, errOut, code := BerthOut(t, t.TempDir(), append([]string{"rehearse", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("berth rehearse %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("reading the report: %v\n%s", err, out)
	}
	t.Logf("berth rehearse %v:\n%s", args, errOut)
	return &r, errOut
}
