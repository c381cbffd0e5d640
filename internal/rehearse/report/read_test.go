package report

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth.io/berth/internal/problem"
)

func rehearsed(queueing string, until time.Duration, jobs ...JobResult) *Report {
	return &Report{Blueprint: "retail-analytics", Queueing: queueing, Trace: "week.csv", Seed: 1, Rehearsed: Duration(until), Jobs: jobs}
}

func job(team, name string, submitted time.Duration) JobResult {
	return JobResult{Team: team, Name: name, Submitted: Duration(submitted)}
}

// Read takes a report.json, the directory that holds one, or -o json's
// output; a file of two designs, a file that is no report and a path
// that is not there are each refused with what to pass instead.
func TestReadOneRehearsal(t *testing.T) {
	dir := t.TempDir()
	one := rehearsed("Kueue", time.Hour, job("team-a", "ft-1", 0))
	if err := WriteDir(filepath.Join(dir, "kueue"), one, nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "kueue"), filepath.Join(dir, "kueue", "report.json")} {
		got, err := Read(path)
		if err != nil {
			t.Fatalf("Read(%s): %v", path, err)
		}
		if got.Queueing != "Kueue" || len(got.Jobs) != 1 || got.Jobs[0].Name != "ft-1" {
			t.Errorf("Read(%s): %+v; want the Kueue rehearsal with its job", path, got)
		}
	}

	if err := WriteDir(filepath.Join(dir, "pair"), one, rehearsed("", time.Hour)); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "notes.json")
	if err := os.WriteFile(notJSON, []byte("ft-1 waited an hour\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.json")
	raw, _ := json.Marshal(map[string]string{"kind": "Pod"})
	if err := os.WriteFile(other, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "pair"):    "holds two designs already",
		notJSON:                       "is not a rehearsal's report",
		other:                         "names no blueprint or trace",
		filepath.Join(dir, "missing"): "no such report",
	} {
		_, err := Read(path)
		var p *problem.Problem
		if !errors.As(err, &p) || !strings.Contains(p.Message, want) || p.Fix == "" {
			t.Errorf("Read(%s): %v; want a problem saying %q, with a fix", path, err, want)
		}
	}
}

// Two rehearsals compare when they replayed the same jobs at the same
// times with the same seed; a job one lists and the other does not is
// the same trace only when it came after the other stopped.
func TestComparableRehearsals(t *testing.T) {
	day := rehearsed("", 24*time.Hour, job("team-a", "ft-1", 0), job("team-b", "bi-1", 2*time.Hour))
	week := rehearsed("Kueue", 168*time.Hour, job("team-a", "ft-1", 0), job("team-b", "bi-1", 2*time.Hour), job("team-b", "bi-2", 30*time.Hour))
	if err := Comparable(day, week); err != nil {
		t.Errorf("a day and a week of the same trace: %v", err)
	}
	if got := Uneven(day, week); len(got) != 1 || !strings.Contains(got[0], "A covers 24h0m0s of trace and B 168h0m0s") {
		t.Errorf("Uneven(day, week): %q; want the spans named", got)
	}
	if got := Uneven(week, week); len(got) != 0 {
		t.Errorf("Uneven(week, week): %q; want nothing", got)
	}

	seeded := rehearsed("Kueue", 24*time.Hour, day.Jobs...)
	seeded.Seed = 2
	moved := rehearsed("Kueue", 24*time.Hour, job("team-a", "ft-1", 0), job("team-b", "bi-1", 3*time.Hour))
	extra := rehearsed("Kueue", 24*time.Hour, job("team-a", "ft-1", 0), job("team-b", "bi-1", 2*time.Hour), job("team-c", "etl-1", 5*time.Hour))
	for name, c := range map[string]struct {
		b    *Report
		want string
	}{
		"another seed":                       {seeded, "different seeds (1 and 2)"},
		"a job submitted at other times":     {moved, "job team-b/bi-1 is submitted at 2h0m0s in one and at 3h0m0s in the other"},
		"a job only one has, in both's span": {extra, "B has job team-c/etl-1 submitted at 5h0m0s, and the other, which ran to 24h0m0s, has none"},
	} {
		err := Comparable(day, c.b)
		var p *problem.Problem
		if !errors.As(err, &p) || !strings.Contains(p.Message, c.want) || p.Fix == "" {
			t.Errorf("%s: %v; want a problem saying %q, with a fix", name, err, c.want)
		}
	}
}
