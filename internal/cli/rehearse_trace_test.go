package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"berth.io/berth/internal/problem"
)

// writeRetail copies the trace package's retail trace into a directory
// of the test's, as week.csv, and returns its path.
func writeRetail(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../rehearse/trace/testdata/retail.csv")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "week.csv")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The waits recorded beside the trace come with it; without that file
// the trace has none.
func TestReadTraceReadsTheWaitsBesideIt(t *testing.T) {
	path := writeRetail(t)
	tr, err := readTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.RecordedWaits != nil {
		t.Errorf("a trace without week.waits.csv has recorded waits %v", tr.RecordedWaits)
	}
	waits := filepath.Join(filepath.Dir(path), "week.waits.csv")
	if err := os.WriteFile(waits, []byte("name,team,recorded_wait\nranker-ft,team-a,4m10s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tr, err = readTrace(path); err != nil {
		t.Fatal(err)
	}
	for _, j := range tr.Jobs {
		w, ok := tr.RecordedWait(j)
		if want := j.Team == "team-a" && j.Name == "ranker-ft"; ok != want || (ok && w != 4*time.Minute+10*time.Second) {
			t.Errorf("%s/%s: recorded wait %s, %v", j.Team, j.Name, w, ok)
		}
	}
	if jittered := tr.Jittered(time.Hour, 7); len(jittered.RecordedWaits) != 1 {
		t.Errorf("the jittered trace has recorded waits %v; want the trace's", jittered.RecordedWaits)
	}
}

// A broken waits file stops the rehearsal with its problem at its line,
// as a broken trace does.
func TestReadTraceGivesABrokenWaitsFilesProblemAtItsLine(t *testing.T) {
	path := writeRetail(t)
	waits := filepath.Join(filepath.Dir(path), "week.waits.csv")
	if err := os.WriteFile(waits, []byte("name,team,recorded_wait\nranker-ft,team-a,4m10s\nranker-ft,team-a,soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readTrace(path)
	var problems problem.List
	if !errors.As(err, &problems) || len(problems) != 1 {
		t.Fatalf("error %v; want one problem", err)
	}
	if p := problems[0]; p.File != waits || p.Line != 3 || p.Field != "recorded_wait" {
		t.Errorf("problem at %s:%d, field %q; want %s:3, recorded_wait:\n%s", p.File, p.Line, p.Field, waits, err)
	}
}
