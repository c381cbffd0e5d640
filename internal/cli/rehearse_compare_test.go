package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse/report"
)

// berth rehearse compare prints two rehearsals rehearsed apart as --vs
// prints them, writes them side by side to --report, and warns when
// one covers less of the trace than the other.
func TestRehearseCompare(t *testing.T) {
	dir := t.TempDir()
	wait := report.Duration(5 * time.Minute)
	rep := func(queueing string, until time.Duration) *report.Report {
		return &report.Report{
			Blueprint: "retail-analytics", Queueing: queueing, Trace: "examples/retail-week.csv", Seed: 1, Rehearsed: report.Duration(until),
			Jobs:   []report.JobResult{{Team: "team-b", Class: "training", Name: "ft-1", State: report.Completed, Wait: &wait}},
			Groups: []report.GroupResult{{Team: "team-b", Class: "training", Jobs: 1, WaitP50: wait, WaitP95: wait}},
		}
	}
	quota, kueue := filepath.Join(dir, "quota"), filepath.Join(dir, "kueue")
	if err := report.WriteDir(quota, rep("ResourceQuota", 24*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteDir(kueue, rep("Kueue", 12*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		cmd := newRehearseCommand(Streams{Out: &out, ErrOut: &errOut})
		cmd.SetArgs(append([]string{"compare"}, args...))
		cmd.SetOut(&errOut)
		cmd.SetErr(&errOut)
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}

	both := filepath.Join(dir, "quota-vs-kueue")
	out, warnings, err := run(quota, filepath.Join(kueue, "report.json"), "--report", both)
	if err != nil {
		t.Fatalf("berth rehearse compare: %v\n%s", err, warnings)
	}
	for _, want := range []string{
		"Trace examples/retail-week.csv, seed 1: A is retail-analytics (ResourceQuota), B is retail-analytics (Kueue)",
		"team-b/training wait p95",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("berth rehearse compare printed:\n%s\nwant %q", out, want)
		}
	}
	if !strings.Contains(warnings, "warning: A covers 24h0m0s of trace and B 12h0m0s") {
		t.Errorf("berth rehearse compare warned:\n%s\nwant the two spans named", warnings)
	}
	// What --report wrote is the pair, as --vs writes it: compare refuses
	// it as one side.
	if _, err := report.Read(both); err == nil || !strings.Contains(err.Error(), "holds two designs already") {
		t.Errorf("reading --report's directory as one rehearsal: %v; want it to hold the pair", err)
	}

	out, _, err = run(quota, kueue, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var pair struct{ A, B *report.Report }
	if err := json.Unmarshal([]byte(out), &pair); err != nil || pair.A == nil || pair.B == nil || pair.A.Queueing != "ResourceQuota" || pair.B.Queueing != "Kueue" {
		t.Errorf("berth rehearse compare -o json: %v\n%s\nwant {a: ResourceQuota, b: Kueue}", err, out)
	}

	if _, _, err := run(quota); err == nil || !strings.Contains(err.Error(), "takes two reports") {
		t.Errorf("berth rehearse compare with one report: %v; want the usage", err)
	}
}

// Two sets of replications written by --repeat N --report DIR compare
// seed by seed, as --repeat with --vs would: B's wait is 5 minutes less
// on both seeds they share, a verdict; a seed only A ran is left out,
// with a warning.
func TestRehearseCompareSets(t *testing.T) {
	dir := t.TempDir()
	rep := func(queueing string, seed int64, wait time.Duration) *report.Report {
		w := report.Duration(wait)
		return &report.Report{
			Blueprint: "retail-analytics", Queueing: queueing, Trace: "examples/retail-week.csv", Seed: seed, Rehearsed: report.Duration(time.Hour),
			Jobs:   []report.JobResult{{Team: "team-b", Class: "training", Name: "ft-1", State: report.Completed, Wait: &w}},
			Groups: []report.GroupResult{{Team: "team-b", Class: "training", Jobs: 1, WaitP50: w, WaitP95: w, WaitMax: w}},
		}
	}
	quota, kueue := filepath.Join(dir, "quota"), filepath.Join(dir, "kueue")
	if err := writeReplications(&bytes.Buffer{}, "table", quota, [][]*report.Report{{rep("ResourceQuota", 1, 20*time.Minute), rep("ResourceQuota", 2, 30*time.Minute), rep("ResourceQuota", 3, 25*time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if err := writeReplications(&bytes.Buffer{}, "table", kueue, [][]*report.Report{{rep("Kueue", 1, 15*time.Minute), rep("Kueue", 2, 25*time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := newRehearseCommand(Streams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"compare", quota, kueue, "-o", "json"})
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("berth rehearse compare of two sets: %v\n%s", err, errOut.String())
	}
	var doc struct {
		A, B       []*report.Report
		Comparison []report.Paired
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("reading the comparison: %v\n%s", err, out.String())
	}
	if len(doc.A) != 2 || len(doc.B) != 2 {
		t.Fatalf("%d and %d replications compared; want the 2 seeds both ran", len(doc.A), len(doc.B))
	}
	for _, c := range doc.Comparison {
		if c.Name == "team-b/training wait p50" && (c.Diff != -300 || c.Verdict != report.BBetter) {
			t.Errorf("the wait: %+v; want B 5 minutes less on each seed, B better", c)
		}
	}
	if !strings.Contains(errOut.String(), "seeds [3] ran in A only") {
		t.Errorf("compare warned:\n%s\nwant seed 3 named", errOut.String())
	}
}
