package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"berth.io/berth/internal/rehearse/report"
)

// invarianceTrace has, in half an hour of trace, a piece of each kind of
// work whose timing a rehearsal measures: an inference service through a
// traffic step (the HPA controller's syncs), two teams' training (the
// node autoscaler's scans, KWOK's stages, the scheduler), and team-b's
// third GPU job, which its quota of two refuses until one of the first
// ends (the Job controller's retries).
const invarianceTrace = `apiVersion: berth.io/v1alpha1
kind: Trace
spec:
  jobs:
  - {submit: 0s, team: team-a, kind: inference, name: reco, pods: 1, cpu: "1", memory: 2Gi}
  - {submit: 0s, team: team-a, kind: training, name: a1, pods: 1, gpus: 1, cpu: "4", memory: 16Gi, duration: 20m}
  - {submit: 1m, team: team-b, kind: training, name: b1, pods: 1, gpus: 1, cpu: "4", memory: 16Gi, duration: 10m}
  - {submit: 1m, team: team-b, kind: training, name: b2, pods: 1, gpus: 1, cpu: "4", memory: 16Gi, duration: 12m}
  - {submit: 2m, team: team-b, kind: training, name: b3, pods: 1, gpus: 1, cpu: "4", memory: 16Gi, duration: 5m}
  load:
    steps:
    - at: 0s
      workloads: [{namespace: team-a, name: reco, rps: 20}]
    - at: 5m
      workloads: [{namespace: team-a, name: reco, rps: 100}]
    - at: 15m
      workloads: [{namespace: team-a, name: reco, rps: 20}]
`

// TestRehearseSmokeInvariance is the quick tier's check of the
// rehearsal's clock (test/long/rehearse's TestRehearseInvariance is the
// whole one): the same half hour of trace replayed as fast as the
// cluster settles and again at most 120 times real time gives the same
// report, figure for figure, and one in which each kind of work
// happened. A component left on the wall clock fails it: the Job
// controller's retries on wall time come seconds of trace apart in one
// replay and minutes in the other; the HPA controller's first sync, 15
// wall seconds in, comes after both replays (about 5 and 10 s), and
// reco never scales.
func TestRehearseSmokeInvariance(t *testing.T) {
	home := t.TempDir()
	bp := retailFile(t, home, func(s string) string { return s })
	trace := filepath.Join(home, "invariance.yaml")
	if err := os.WriteFile(trace, []byte(invarianceTrace), 0o600); err != nil {
		t.Fatal(err)
	}
	rehearse := func(args ...string) *report.Report {
		t.Helper()
		out, errOut, code := berthOut(t, home, append([]string{"rehearse", "-o", "json", "-f", bp, "--trace", trace, "--cloud", "aws"}, args...)...)
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
			t.Fatalf("berth rehearse %v: exit %d, %v\n%s%s", args, code, err, errOut, out)
		}
		t.Logf("speed %g: %s of trace in %s of wall time, %d clock steps", r.Speed, time.Duration(r.Rehearsed), time.Duration(r.Wall), r.Clock.Steps)
		return &r
	}
	fast := rehearse()
	paced := rehearse("--speed", "120")
	if diff := cmp.Diff(fast, paced, cmpopts.IgnoreFields(report.Report{}, "Speed", "Wall", "Clock")); diff != "" {
		t.Errorf("the report at --speed 120 differs from the one as fast as the cluster settles (-fast +paced):\n%s", diff)
	}
	// What the reports hold happened: two empty reports are equal too.
	if len(fast.Jobs) != 4 || len(fast.Services) != 1 {
		t.Fatalf("jobs %d, services %d; want the trace's 4 and reco", len(fast.Jobs), len(fast.Services))
	}
	for _, j := range fast.Jobs {
		if j.State != report.Completed {
			t.Errorf("job %s %s; want completed", j.Name, j.State)
		}
		if j.Name == "b3" && j.QuotaRefused == 0 {
			t.Error("b3 was never refused by team-b's quota of two GPUs")
		}
	}
	if s := fast.Services[0]; s.PeakReplicas < 2 {
		t.Errorf("reco peaked at %d replicas; its HPA did not scale it for 100 rps", s.PeakReplicas)
	}
}
