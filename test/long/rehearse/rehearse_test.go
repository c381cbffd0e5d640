//go:build long

package rehearse_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/test/harness"
)

// TestRehearse replays two one-GPU jobs submitted together (first runs
// an hour, second half an hour) on two designs, on clusters of their own,
// and checks every figure against the hand calculation. P = 10 minutes to
// provision a GPU node; the autoscaler's scan at 10 s (scan) grows the
// pool for what is pending; a Job completes a second after its pod
// (jobDone).
//
// Design A, one GPU node at most and a quota of one GPU: the quota
// refuses second's pod while first's holds the GPU, and the Job
// controller tries again on its backoff (1, 3, 7 ... seconds, then every
// minute: quotaRetry), the first time after first's pod ends at
// scan+P+1h; the node is still up, so second's pod runs at once:
//
//	first    wait scan+P = 10m10s                  run 1h + jobDone
//	second   wait quotaRetry(scan+P+1h) = 1h11m3s  run 30m + jobDone, quota-refused its whole wait
//	end      second's wait + 30m + jobDone
//	gpu      one node from scan+P to the end; system one node throughout
//
// Design B, two of each: both wait for their nodes; second's node is
// unneeded from its pod's end (scan+P+30m, a point of the scan grid) and
// goes ten minutes later; first's stays to the end:
//
//	first, second  wait scan+P                     runs 1h and 30m, + jobDone
//	gpu      (30m + unneeded) + (1h + jobDone) node-hours; end scan+P+1h+jobDone
//
// Cost is node-hours at the pools' prices (gpu $1.00, system $0.20 an
// hour), to the cent.
func TestRehearse(t *testing.T) {
	home := t.TempDir()
	reportDir := filepath.Join(home, "report")
	out, errOut, code := harness.BerthOut(t, home, "rehearse", "-f", "testdata/rehearse-a.yaml", "--vs", "testdata/rehearse-b.yaml",
		"--trace", "testdata/rehearse.csv", "-o", "json")
	if code != 0 {
		t.Fatalf("berth rehearse --vs: exit %d\n%s\n%s", code, out, errOut)
	}
	var both map[string]*report.Report
	if err := json.Unmarshal([]byte(out), &both); err != nil {
		t.Fatalf("reading the report: %v\n%s", err, out)
	}
	a, b := both["a"], both["b"]
	if a == nil || b == nil {
		t.Fatalf("the report has no a or b:\n%s", out)
	}
	const p = 10 * time.Minute
	up := scan + p

	first, second := jobNamed(t, a, "first"), jobNamed(t, a, "second")
	exactly(t, a, "first's wait", waited(t, a, first), up)
	exactly(t, a, "first's run", ran(t, a, first), time.Hour+jobDone)
	retry := quotaRetry(up + time.Hour)
	exactly(t, a, "second's wait", waited(t, a, second), retry)
	exactly(t, a, "second's quota-refused time", time.Duration(second.QuotaRefused), retry)
	exactly(t, a, "second's run", ran(t, a, second), 30*time.Minute+jobDone)
	end := retry + 30*time.Minute + jobDone
	exactly(t, a, "the rehearsal's end", time.Duration(a.Rehearsed), end)
	exactlyHours(t, a, "gpu's node-hours", reportPool(t, a, "gpu").NodeHours, end-up)
	exactlyHours(t, a, "system's node-hours", reportPool(t, a, "system").NodeHours, end)

	for _, name := range []string{"first", "second"} {
		j := jobNamed(t, b, name)
		exactly(t, b, name+"'s wait", waited(t, b, j), up)
		if j.QuotaRefused != 0 {
			t.Errorf("%s: %s was quota-refused for %s; its quota fits both", b.Blueprint, name, j.QuotaRefused)
		}
	}
	exactly(t, b, "first's run", ran(t, b, jobNamed(t, b, "first")), time.Hour+jobDone)
	exactly(t, b, "second's run", ran(t, b, jobNamed(t, b, "second")), 30*time.Minute+jobDone)
	endB := up + time.Hour + jobDone
	exactly(t, b, "the rehearsal's end", time.Duration(b.Rehearsed), endB)
	gpuB := (30*time.Minute + unneeded) + (time.Hour + jobDone)
	exactlyHours(t, b, "gpu's node-hours", reportPool(t, b, "gpu").NodeHours, gpuB)

	for _, c := range []struct {
		r          *report.Report
		gpu, total time.Duration
	}{{a, end - up, end}, {b, gpuB, endB}} {
		if got, want := cents(t, c.r, "gpu"), priced(c.gpu, 1.00); got != want {
			t.Errorf("%s: gpu cost %d cents; %s at $1.00 is %d", c.r.Blueprint, got, c.gpu, want)
		}
		if got, want := cents(t, c.r, "system"), priced(c.total, 0.20); got != want {
			t.Errorf("%s: system cost %d cents; %s at $0.20 is %d", c.r.Blueprint, got, c.total, want)
		}
	}

	// The table and the page, on one design; the table writes figures of
	// the trace alone.
	table, errOut, code := harness.BerthOut(t, home, "rehearse", "-f", "testdata/rehearse-b.yaml", "--trace", "testdata/rehearse.csv", "--report", reportDir)
	if code != 0 {
		t.Fatalf("berth rehearse: exit %d\n%s\n%s", code, table, errOut)
	}
	for _, want := range []string{"WAIT p50", "\nml ", "\ngpu ", "\ntotal", "exact to 1s"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if !strings.Contains(errOut, "clock steps") {
		t.Errorf("berth rehearse said nothing of its clock's steps on stderr:\n%s", errOut)
	}
	page, err := os.ReadFile(filepath.Join(reportDir, "report.html"))
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
	out, errOut, code := harness.BerthOut(t, home, "rehearse", "-f", "testdata/rehearse-a.yaml", "--trace", bad)
	all := out + errOut
	if code == 0 || !strings.Contains(all, bad+":2") || !strings.Contains(all, "fix:") || strings.Contains(all, "starting a local cluster") {
		t.Errorf("exit %d:\n%s\nwant an error at %s:2 with its fix, and no cluster", code, all, bad)
	}
}
