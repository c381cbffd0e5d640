//go:build long

package rehearse_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/test/harness"
)

// TestRecordRoundTrip is issue 48's round trip: a trace of training that
// checkpoints, batch, Jobs the quota refuses in turn, an inference
// service of an hour and a spot interruption is rehearsed while `berth
// record --watch` records the rehearsal's cluster. The recording holds
// the same rows (teams, kinds, classes, shapes, checkpoints, submits and
// run times within the clock's step) and the same interruption, though
// the cluster ran bert for 1h10m30s and tune-a for 48m30s in all; and
// rehearsing it gives the same report, job by job and in total, within
// that step.
//
// Mutations it catches: a recording on the wall clock (its rows start
// where the recorder did); a run time summed over a Job's attempts (bert
// 1h30m); a recorder that outlives the rehearsal, or lists the services
// once the cluster has gone (no reco); a recording without the
// interruption (the replay's bert and tune-a never restart).
func TestRecordRoundTrip(t *testing.T) {
	tmp := t.TempDir()
	bp, original := "testdata/record.yaml", "testdata/record-trace.yaml"
	r := startRehearsal(t, tmp, "Watch it:", "-f", bp, "--trace", original, "--speed", "60")
	m := regexp.MustCompile(`--kubeconfig (\S+)`).FindStringSubmatch(r.errOut.String())
	if m == nil {
		t.Fatalf("no kubeconfig in the rehearsal's stderr:\n%s", r.errOut.String())
	}
	recorded := filepath.Join(t.TempDir(), "day.yaml")
	var recOut harness.LockedBuffer
	rec := harness.Command(t, t.TempDir(), "record", "--watch", "--kubeconfig", m[1], "-f", bp, "-o", recorded)
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	recDone := make(chan error, 1)
	go func() { recDone <- rec.Wait() }()
	t.Cleanup(func() { rec.Process.Kill() })

	select {
	case <-r.done:
	case <-time.After(8 * time.Minute):
		t.Fatalf("the rehearsal still runs after 8 minutes:\n%s", r.errOut.String())
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("berth rehearse: exit %d\n%s", code, r.errOut.String())
	}
	select {
	case err := <-recDone:
		if err != nil {
			t.Fatalf("berth record --watch: %v\n%s", err, recOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("berth record --watch still runs a minute after the rehearsal ended:\n%s", recOut.String())
	}
	t.Logf("berth record --watch:\n%s", recOut.String())
	var a report.Report
	if err := json.Unmarshal(r.out.Bytes(), &a); err != nil {
		t.Fatalf("reading the rehearsal's report: %v\n%s", err, r.out.String())
	}
	tol := time.Duration(a.Tolerance)

	want, err := trace.Read(original)
	if err != nil {
		t.Fatal(err)
	}
	got, err := trace.Read(recorded)
	if err != nil {
		t.Fatalf("the recording does not read as a trace: %v", err)
	}
	sameRows(t, want, got, tol)

	b := rehearseJSON(t, "-f", bp, "--trace", recorded)
	sameReports(t, &a, b, tol)
}

// sameRows checks the recorded trace against the original, row by row.
func sameRows(t *testing.T, want, got *trace.Trace, tol time.Duration) {
	t.Helper()
	rows := map[string]trace.Job{}
	for _, j := range got.Jobs {
		rows[j.Team+"/"+j.Name] = j
	}
	if len(got.Jobs) != len(want.Jobs) {
		t.Errorf("the recording has %d rows; want the trace's %d", len(got.Jobs), len(want.Jobs))
	}
	for _, w := range want.Jobs {
		g, ok := rows[w.Team+"/"+w.Name]
		if !ok {
			t.Errorf("row %s/%s is not in the recording", w.Team, w.Name)
			continue
		}
		if g.Kind != w.Kind || g.Class != w.Class || g.Pods != w.Pods || g.GPUs != w.GPUs || g.CPU.Cmp(w.CPU) != 0 || g.Memory.Cmp(w.Memory) != 0 || g.Checkpoint != w.Checkpoint {
			t.Errorf("row %s/%s recorded as %s %s, %d pods of %d GPUs, %s CPU, %s memory, checkpoint %s; the trace says %s %s, %d pods of %d GPUs, %s CPU, %s memory, checkpoint %s",
				w.Team, w.Name, g.Kind, g.Class, g.Pods, g.GPUs, g.CPU.String(), g.Memory.String(), g.Checkpoint, w.Kind, w.Class, w.Pods, w.GPUs, w.CPU.String(), w.Memory.String(), w.Checkpoint)
		}
		within(t, fmt.Sprintf("row %s/%s's submit", w.Team, w.Name), g.Submit, w.Submit, tol)
		within(t, fmt.Sprintf("row %s/%s's duration", w.Team, w.Name), g.Duration, w.Duration, tol)
	}
	if len(got.Interruptions) != len(want.Interruptions) {
		t.Fatalf("the recording has interruptions %+v; want the trace's %+v", got.Interruptions, want.Interruptions)
	}
	for i, w := range want.Interruptions {
		g := got.Interruptions[i]
		if g.Pool != w.Pool {
			t.Errorf("interruption %d of pool %s; want %s", i, g.Pool, w.Pool)
		}
		within(t, fmt.Sprintf("interruption %d's moment", i), g.At, w.At, tol)
	}
}

// sameReports checks the replay of the recording against the original
// rehearsal: each job's wait, run, state, interruptions and lost work,
// each service, each pool and the cost.
func sameReports(t *testing.T, a, b *report.Report, tol time.Duration) {
	t.Helper()
	within(t, "the trace time rehearsed", time.Duration(b.Rehearsed), time.Duration(a.Rehearsed), tol)
	jobs := map[string]report.JobResult{}
	for _, j := range b.Jobs {
		jobs[j.Team+"/"+j.Name] = j
	}
	if len(b.Jobs) != len(a.Jobs) {
		t.Errorf("the replay reports %d jobs; the rehearsal %d", len(b.Jobs), len(a.Jobs))
	}
	for _, x := range a.Jobs {
		y, ok := jobs[x.Team+"/"+x.Name]
		if !ok {
			t.Errorf("job %s/%s is not in the replay's report", x.Team, x.Name)
			continue
		}
		what := "job " + x.Team + "/" + x.Name
		if y.State != x.State || y.Interruptions != x.Interruptions || y.Class != x.Class {
			t.Errorf("%s: %s, %s, %d interruptions in the replay; %s, %s, %d in the rehearsal", what, y.State, y.Class, y.Interruptions, x.State, x.Class, x.Interruptions)
		}
		within(t, what+"'s submit", time.Duration(y.Submitted), time.Duration(x.Submitted), tol)
		within(t, what+"'s wait", waited(t, b, y), waited(t, a, x), tol)
		within(t, what+"'s run", ran(t, b, y), ran(t, a, x), tol)
		within(t, what+"'s quota-refused time", time.Duration(y.QuotaRefused), time.Duration(x.QuotaRefused), tol)
		hoursWithin(t, what+"'s lost GPU-hours", y.LostGPUHours, x.LostGPUHours, tol)
	}
	if len(b.Services) != len(a.Services) {
		t.Fatalf("the replay reports services %+v; the rehearsal %+v", b.Services, a.Services)
	}
	for i, x := range a.Services {
		y := b.Services[i]
		if y.Name != x.Name || y.PeakReplicas != x.PeakReplicas || y.MeanReplicas != x.MeanReplicas {
			t.Errorf("service %+v in the replay; %+v in the rehearsal", y, x)
		}
	}
	if len(b.Pools) != len(a.Pools) {
		t.Fatalf("the replay reports %d pools; the rehearsal %d", len(b.Pools), len(a.Pools))
	}
	for i, x := range a.Pools {
		y := b.Pools[i]
		if y.Name != x.Name || y.PeakNodes != x.PeakNodes {
			t.Errorf("pool %s peaked at %d nodes in the replay; %s at %d in the rehearsal", y.Name, y.PeakNodes, x.Name, x.PeakNodes)
		}
		hoursWithin(t, "pool "+x.Name+"'s node-hours", y.NodeHours, x.NodeHours, tol)
	}
	if a.Cost == nil || b.Cost == nil {
		t.Fatalf("no cost in a report")
	}
	if a.Cost.Total != b.Cost.Total {
		t.Errorf("the replay costs %v; the rehearsal %v", b.Cost.Total, a.Cost.Total)
	}
}

func within(t *testing.T, what string, got, want, tol time.Duration) {
	t.Helper()
	if (got - want).Abs() > tol {
		t.Errorf("%s: %s in the recording's replay; %s in the original (tolerance %s)", what, got, want, tol)
	}
}

// hoursWithin checks hours that may differ by the tolerance in each of a
// few spans.
func hoursWithin(t *testing.T, what string, got, want float64, tol time.Duration) {
	t.Helper()
	if d := got - want; d > 4*tol.Hours() || d < -4*tol.Hours() {
		t.Errorf("%s: %.5f h in the replay; %.5f h in the original (within %s each span)", what, got, want, tol)
	}
}
