package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse"
)

// berthOut runs the test binary as berth, with stdout and stderr apart.
func berthOut(t *testing.T, home string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1", "BERTH_HOME="+home, "KUBECONFIG="+filepath.Join(home, "kubeconfig"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running berth %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestRehearse replays two one-GPU jobs submitted together on two
// designs, on clusters of their own, and checks what the clusters did
// against what the designs imply. Design A has one GPU node at most and a
// quota of one GPU: the second job's pod is refused by the quota until
// the first ends, after the ten minutes the node takes to provision and
// the hour the first runs. Design B has two of each: both wait only for
// their nodes. Cost is node-hours times the pools' prices.
func TestRehearse(t *testing.T) {
	home := t.TempDir()
	report := filepath.Join(home, "report")
	out, errOut, code := berthOut(t, home, "rehearse", "-f", "testdata/rehearse-a.yaml", "--vs", "testdata/rehearse-b.yaml",
		"--trace", "testdata/rehearse.csv", "--speed", "120", "-o", "json")
	if code != 0 {
		t.Fatalf("berth rehearse --vs: exit %d\n%s\n%s", code, out, errOut)
	}
	var both map[string]*rehearse.Report
	if err := json.Unmarshal([]byte(out), &both); err != nil {
		t.Fatalf("reading the report: %v\n%s", err, out)
	}
	a, b := both["a"], both["b"]
	if a == nil || b == nil {
		t.Fatalf("the report has no a or b:\n%s", out)
	}
	job := func(r *rehearse.Report, name string) rehearse.JobResult {
		t.Helper()
		for _, j := range r.Jobs {
			if j.Name == name {
				return j
			}
		}
		t.Fatalf("%s: no job %s in %+v", r.Blueprint, name, r.Jobs)
		return rehearse.JobResult{}
	}
	// Floors at speed 120: a second of wall time is two minutes of trace
	// time, and a pod's start time has whole seconds, so a run may end up
	// to a second early or late; a loaded machine adds its lag.
	early := 4 * time.Minute
	slack := 8*time.Minute + 3*time.Duration(a.SubmitLag)*120
	within := func(r *rehearse.Report, name string, low, high time.Duration) {
		t.Helper()
		j := job(r, name)
		if j.State != rehearse.Completed || j.Wait == nil {
			t.Errorf("%s: job %s %s with wait %v; want completed", r.Blueprint, name, j.State, j.Wait)
			return
		}
		if w := time.Duration(*j.Wait); w < low-early || w > high+slack {
			t.Errorf("%s: job %s waited %s; want %s to %s", r.Blueprint, name, w, low-early, high+slack)
		}
	}
	within(a, "first", 10*time.Minute, 12*time.Minute)
	within(a, "second", 70*time.Minute, 72*time.Minute)
	within(b, "first", 10*time.Minute, 12*time.Minute)
	within(b, "second", 10*time.Minute, 12*time.Minute)
	if q := job(a, "second").QuotaRefused; time.Duration(q) < 50*time.Minute {
		t.Errorf("%s: the second job's quota-refused time is %s; want most of the first job's hour", a.Blueprint, q)
	}
	if q := job(b, "second").QuotaRefused; q != 0 {
		t.Errorf("%s: the second job was quota-refused for %s; its quota fits both", b.Blueprint, q)
	}
	for _, r := range []*rehearse.Report{a, b} {
		if r.Cost == nil {
			t.Fatalf("%s: no cost", r.Blueprint)
		}
		for _, p := range r.Cost.Pools {
			if p.Cost == nil {
				t.Errorf("%s: pool %s has no cost: %v", r.Blueprint, p.Price.Pool, p.Problem)
				continue
			}
			want := p.OnDemandHours * float64(p.Price.OnDemand) / 1e6 * 100
			if got := float64(*p.Cost); got < want-1 || got > want+1 {
				t.Errorf("%s: pool %s cost %d cents for %.3f node-hours at %s; want %.0f", r.Blueprint, p.Price.Pool, *p.Cost, p.OnDemandHours, p.Price.OnDemand, want)
			}
		}
	}

	// The table and the page, on one design.
	table, errOut, code := berthOut(t, home, "rehearse", "-f", "testdata/rehearse-b.yaml", "--trace", "testdata/rehearse.csv", "--speed", "240", "--report", report)
	if code != 0 {
		t.Fatalf("berth rehearse: exit %d\n%s\n%s", code, table, errOut)
	}
	for _, want := range []string{"WAIT p50", "\nml ", "\ngpu ", "\ntotal", "Timers left unscaled"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	page, err := os.ReadFile(filepath.Join(report, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("<svg")) || !bytes.Contains(page, []byte("rehearse-two-gpus")) {
		t.Errorf("report.html has no chart or no blueprint name")
	}
}

// A trace that does not fit the blueprint is refused at its line, with
// the fix, before any cluster starts.
func TestRehearseRefusesATraceThatDoesNotFit(t *testing.T) {
	home := t.TempDir()
	bad := filepath.Join(home, "bad.csv")
	if err := os.WriteFile(bad, []byte("submit,team,kind,name,pods,gpus,cpu,memory,duration,checkpoint,class,model\n0s,nobody,training,x,1,1,,,1h,,,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := berthOut(t, home, "rehearse", "-f", "testdata/rehearse-a.yaml", "--trace", bad)
	all := out + errOut
	if code == 0 || !strings.Contains(all, bad+":2") || !strings.Contains(all, "fix:") || strings.Contains(all, "starting a local cluster") {
		t.Errorf("exit %d:\n%s\nwant an error at %s:2 with its fix, and no cluster", code, all, bad)
	}
}
