package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recordedReport is a rehearsal of a trace that recorded waits: team-a
// had three jobs compared and one that never ran, team-c only one that
// never ran.
func recordedReport() *Report {
	wait, recorded := Duration(2*time.Minute), Duration(5*time.Minute)
	return &Report{
		Blueprint: "retail", Trace: "week.csv", Rehearsed: Duration(time.Hour), Tolerance: Duration(time.Second),
		Groups: []GroupResult{{Team: "team-a", Class: "training", Jobs: 4, Completed: 3, NeverRan: 1}},
		Jobs:   []JobResult{{Team: "team-a", Name: "a1", Wait: &wait, RecordedWait: &recorded}},
		RecordedWaits: []RecordedWaitResult{
			{Team: "team-a", Jobs: 3, NeverRan: 1, ReplayedP50: Duration(10 * time.Minute), ReplayedP95: Duration(90 * time.Minute),
				RecordedP50: Duration(4*time.Minute + 10*time.Second), RecordedP95: Duration(time.Hour)},
			{Team: "team-c", NeverRan: 1},
		},
	}
}

// The table has a row per team of replayed against recorded waits, "-"
// for a team none of whose compared jobs ran; a report without recorded
// waits has no such section.
func TestTableSetsReplayedWaitsBesideRecorded(t *testing.T) {
	var out strings.Builder
	if err := WriteTable(&out, recordedReport()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"RECORDED WAITS JOBS REPLAYED p50 p95 RECORDED p50 p95 NEVER RAN",
		"team-a 3 10m 1h30m 4m 1h 1", // 4m10s to the minute
		"team-c 0 - - - - 1",
	} {
		if !containsRow(out.String(), want) {
			t.Errorf("no row %q in\n%s", want, out.String())
		}
	}

	r := recordedReport()
	r.RecordedWaits = nil
	out.Reset()
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "RECORDED") {
		t.Errorf("a report without recorded waits has a section of them:\n%s", out.String())
	}
}

// containsRow says whether text has a line whose fields are want's.
func containsRow(text, want string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.Join(strings.Fields(l), " ") == want {
			return true
		}
	}
	return false
}

// The JSON report names each job's recorded wait and each team's
// comparison, and leaves both out without recorded waits.
func TestJSONHoldsRecordedWaitsOnlyWhenThereAreSome(t *testing.T) {
	raw, err := json.Marshal(recordedReport())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"recordedWait":"5m0s"`,
		`"recordedWaits":[{"team":"team-a","jobs":3,"neverRan":1,"replayedP50":"10m0s","replayedP95":"1h30m0s","recordedP50":"4m10s","recordedP95":"1h0m0s"}`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the JSON lacks %s:\n%s", want, raw)
		}
	}
	r := recordedReport()
	r.Jobs[0].RecordedWait, r.RecordedWaits = nil, nil
	if raw, _ := json.Marshal(r); strings.Contains(string(raw), "recorded") {
		t.Errorf("a report without recorded waits names them:\n%s", raw)
	}
}

// The page has the same comparison as a table, for each design.
func TestPageSetsReplayedWaitsBesideRecorded(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, recordedReport(), nil); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<th>recorded waits</th>",
		"<tr><td>team-a</td><td>3</td><td>10m</td><td>1h30m</td><td>4m</td><td>1h</td><td>1</td></tr>",
		"<tr><td>team-c</td><td>0</td><td>-</td><td>-</td><td>-</td><td>-</td><td>1</td></tr>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}
