package trace

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
)

// openbList is a pod list written for these tests in the layout of
// cluster-trace-gpu-v2023's openb_pod_list_*.csv: header row, times in
// seconds from the trace's start.
const openbList = "testdata/openb_pod_list_sample.csv"

func importOpenB(t *testing.T, list string, opts ImportOptions) (*Trace, ImportReport, error) {
	t.Helper()
	return ImportOpenB(strings.NewReader(list), "openb_pod_list_sample.csv", opts)
}

func openbOptions() ImportOptions {
	return ImportOptions{
		TeamMap: map[string]string{"LS": "team-a", "BE": "team-b", "Burstable": "team-b"},
		For:     24 * time.Hour,
		MaxGPUs: 4,
	}
}

func TestImportOpenB(t *testing.T) {
	got, report, err := importOpenB(t, readFile(t, openbList), openbOptions())
	if err != nil {
		t.Fatal(err)
	}
	q := resource.MustParse
	const f = "openb_pod_list_sample.csv"
	s := time.Second
	want := &Trace{Jobs: []Job{
		{Submit: 0, Team: "team-a", Kind: Training, Name: "sample-pod-01", Pods: 1, GPUs: 1, CPU: q("8"), Memory: q("32Gi"), Duration: 2 * time.Hour, File: f, Line: 2},
		// gpu_milli 250: a quarter of a GPU is a whole one.
		{Submit: 600 * s, Team: "team-b", Kind: Training, Name: "sample-pod-02", Pods: 1, GPUs: 1, CPU: q("4"), Memory: q("15258Mi"), Duration: 3540 * s, File: f, Line: 3},
		// memory_mib 0: what berth new asks.
		{Submit: 900 * s, Team: "team-b", Kind: Training, Name: "sample-pod-10", Pods: 1, GPUs: 1, CPU: q("3"), Duration: 6300 * s, File: f, Line: 11},
		// Four GPUs, at the cap: kept. Its run is from scheduled_time.
		{Submit: 3600 * s, Team: "team-a", Kind: Training, Name: "sample-pod-07", Pods: 1, GPUs: 4, CPU: q("12"), Memory: q("48Gi"), Duration: 4500 * s, File: f, Line: 8},
	}, RecordedWaits: map[string]time.Duration{
		"team-a/sample-pod-01": 0,
		"team-b/sample-pod-02": time.Minute,
		"team-b/sample-pod-10": 15 * time.Minute,
		"team-a/sample-pod-07": 15 * time.Minute,
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Trace{})); diff != "" {
		t.Errorf("ImportOpenB (-want +got):\n%s", diff)
	}
	wantReport := ImportReport{Read: 10, Kept: 4, RoundedGPUs: 2, Dropped: map[string]int{
		droppedNeverScheduled: 1, droppedNeverDeleted: 1, droppedNoRun: 1,
		droppedTeam: 1, droppedWindow: 1, droppedOverGPUs(4): 1,
	}}
	if diff := cmp.Diff(wantReport, report); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if want := "read 10, kept 4; dropped 1 deleted as they were scheduled (no run time), 1 never deleted (no deletion_time: running when the trace was taken), 1 never scheduled (no scheduled_time: pending, or deleted while pending), 1 of more than 4 GPUs a pod, 1 of owners not in the team map, 1 outside the window; 2 rounded up to whole GPUs"; report.String() != want {
		t.Errorf("report.String()\n got: %s\nwant: %s", report, want)
	}
	// The waits are data: each job's, looked up by the job.
	if w, ok := got.RecordedWait(got.Jobs[3]); !ok || w != 15*time.Minute {
		t.Errorf("RecordedWait(sample-pod-07) = %s, %v; want 15m, true", w, ok)
	}
	if _, ok := got.RecordedWait(Job{Team: "team-a", Name: "sample-pod-03"}); ok {
		t.Error("a pod dropped over the cap has a recorded wait")
	}
}

// The window is an offset and a length of the source's time; the trace
// starts at the offset, and has no date. Without a cap, eight GPUs a
// pod are kept.
func TestImportOpenBWindow(t *testing.T) {
	opts := openbOptions()
	opts.Offset, opts.For, opts.MaxGPUs = 600*time.Second, time.Hour, 0
	got, report, err := importOpenB(t, readFile(t, openbList), opts)
	if err != nil {
		t.Fatal(err)
	}
	var submits []string
	for _, j := range got.Jobs {
		submits = append(submits, j.Name+"@"+j.Submit.String())
	}
	// sample-pod-01 (0 s) and -08 (90000 s) are outside [600 s, 4200 s).
	wantSubmits := []string{"sample-pod-02@0s", "sample-pod-10@5m0s", "sample-pod-03@10m0s", "sample-pod-07@50m0s"}
	if diff := cmp.Diff(wantSubmits, submits); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	if !got.Start.IsZero() {
		t.Errorf("the trace starts at %s; an openb trace has no date", got.Start)
	}
	if report.Dropped[droppedWindow] != 2 || got.Jobs[2].GPUs != 8 {
		t.Errorf("report %s, pod-03 of %d GPUs; want 2 outside the window and 8 GPUs kept", report, got.Jobs[2].GPUs)
	}
	// The wait of sample-pod-03 is kept with it: 1500 - 1200 s.
	if w, _ := got.RecordedWait(got.Jobs[2]); w != 5*time.Minute {
		t.Errorf("sample-pod-03 waited %s, want 5m", w)
	}
}

// Owners the team map lacks go to the default team; without a window
// every pod that ran is kept, from the first.
func TestImportOpenBDefaultTeam(t *testing.T) {
	got, report, err := importOpenB(t, readFile(t, openbList), ImportOptions{DefaultTeam: "team-c", Kind: Batch})
	if err != nil {
		t.Fatal(err)
	}
	// Ten pods less the three that never ran.
	if report.Kept != 7 || len(got.Jobs) != 7 || len(got.RecordedWaits) != 7 {
		t.Fatalf("report %s, %d jobs and %d waits; want 7 of each", report, len(got.Jobs), len(got.RecordedWaits))
	}
	last := got.Jobs[6]
	if last.Name != "sample-pod-08" || last.Submit != 90000*time.Second || last.Kind != Batch || last.Team != "team-c" {
		t.Errorf("last job %+v, want sample-pod-08 of team-c, a batch job at 25h", last)
	}
}

// A row not in the published layout is a problem at its line, and every
// such row is found in one pass.
func TestImportOpenBMalformed(t *testing.T) {
	list := readFile(t, openbList)
	for _, r := range []struct{ old, new string }{
		{"LS,Running,0,7200,0", "LS,Running,yesterday,7200,0"},
		{"BE,Succeeded,600,4200,660", "BE,Succeeded,600,4200,-60"},
		{"V100M32,LS,Running,1200,12000,1500", "V100M32,LS,Running,1200"},
		{"T4|P100,LS,Failed,3600,9000,4500", "T4|P100,LS,Failed,3600,9000,3000"},
		{"sample-pod-10,3000,0,1,300", "sample-pod-10,3000,0,1.5,300"},
	} {
		if !strings.Contains(list, r.old) {
			t.Fatalf("%s lacks %q", openbList, r.old)
		}
		list = strings.Replace(list, r.old, r.new, 1)
	}
	_, _, err := importOpenB(t, list, openbOptions())
	assertImportProblems(t, err, []string{
		`openb_pod_list_sample.csv:2: creation_time: "yesterday" is not a number`,
		"openb_pod_list_sample.csv:3: scheduled_time: -60 is negative",
		"openb_pod_list_sample.csv:4: the row has 9 columns; the header 11",
		"openb_pod_list_sample.csv:8: scheduled_time: the pod is scheduled (3000) before it is created (3600)",
		"openb_pod_list_sample.csv:11: num_gpu: 1.5 is not a whole number of GPUs",
	})
}

func TestImportOpenBHeader(t *testing.T) {
	list := readFile(t, openbList)
	_, body, _ := strings.Cut(list, "\n")
	for _, tc := range []struct {
		name, list string
		want       string
	}{
		{"none", body, `openb_pod_list_sample.csv:1: the header is "sample-pod-01,`},
		{"resources only", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nsample-pod-01,8000,32768,1,1000\n", "openb_pod_list_sample.csv:1: the pod list has no times"},
		{"renamed", strings.Replace(list, "scheduled_time", "start_time", 1), `openb_pod_list_sample.csv:1: the header is "name,cpu_milli`},
		{"empty", "", "openb_pod_list_sample.csv: the file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := importOpenB(t, tc.list, openbOptions())
			assertImportProblems(t, err, []string{tc.want})
		})
	}
}

// openb's times are offsets; the dated sources' are dates. Each refuses
// the other's window, and For ends a dated window as To would.
func TestImportWindowOptions(t *testing.T) {
	_, _, err := importOpenB(t, readFile(t, openbList), ImportOptions{DefaultTeam: "team-a", From: time.Unix(600, 0)})
	assertImportProblems(t, err, []string{"From: openb's times are offsets from the trace's start, not dates"})

	jobs, tasks := readFile(t, alibabaJobs), readFile(t, alibabaTasks)
	_, _, err = importAlibaba(t, jobs, tasks, ImportOptions{DefaultTeam: "team-a", Offset: time.Hour})
	assertImportProblems(t, err, []string{"Offset: the source's times are dates, not offsets from its start"})
	_, _, err = importAlibaba(t, jobs, tasks, ImportOptions{DefaultTeam: "team-a", For: time.Hour})
	assertImportProblems(t, err, []string{"For: the window's length counts from From, which is unset"})

	withTo, _, err := importAlibaba(t, jobs, tasks, alibabaOptions())
	if err != nil {
		t.Fatal(err)
	}
	opts := alibabaOptions()
	opts.To, opts.For = time.Time{}, opts.To.Sub(opts.From)
	withFor, _, err := importAlibaba(t, jobs, tasks, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(withTo, withFor, cmpopts.IgnoreUnexported(Trace{})); diff != "" || len(withFor.Jobs) != 9 {
		t.Errorf("From and For keep other jobs than From and To (-To +For):\n%s", diff)
	}
}

// The cap drops a dated source's jobs as it does openb's pods.
func TestImportMaxGPUs(t *testing.T) {
	opts := alibabaOptions()
	opts.MaxGPUs = 1
	got, report, err := importAlibaba(t, readFile(t, alibabaJobs), readFile(t, alibabaTasks), opts)
	if err != nil {
		t.Fatal(err)
	}
	// TestImportAlibaba keeps 9, one of them of 8 GPUs a pod.
	if report.Kept != 8 || report.Dropped[droppedOverGPUs(1)] != 1 {
		t.Errorf("report %s, want 8 kept and 1 dropped over the cap", report)
	}
	for _, j := range got.Jobs {
		if j.GPUs > 1 {
			t.Errorf("job %s asks %d GPUs a pod, over the cap of 1", j.Name, j.GPUs)
		}
	}
}

// The recorded waits go beside the trace and come back onto it.
func TestWaitsRoundTrip(t *testing.T) {
	imported, _, err := importOpenB(t, readFile(t, openbList), openbOptions())
	if err != nil {
		t.Fatal(err)
	}
	var csv, waits bytes.Buffer
	if err := Write(&csv, imported); err != nil {
		t.Fatal(err)
	}
	if err := WriteWaits(&waits, imported); err != nil {
		t.Fatal(err)
	}
	wantWaits := "name,team,recorded_wait\nsample-pod-01,team-a,0s\nsample-pod-02,team-b,1m\nsample-pod-10,team-b,15m\nsample-pod-07,team-a,15m\n"
	if diff := cmp.Diff(wantWaits, waits.String()); diff != "" {
		t.Errorf("WriteWaits (-want +got):\n%s", diff)
	}
	// The trace's own file keeps berth's header: the waits are not in it.
	if !strings.HasPrefix(csv.String(), Header+"\n") {
		t.Errorf("the trace starts %q, want the header", csv.String()[:min(csv.Len(), 80)])
	}
	back, err := Parse("trace.csv", csv.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if back.RecordedWaits != nil {
		t.Errorf("a trace read alone has waits %v", back.RecordedWaits)
	}
	if err := ReadWaits(&waits, "trace.waits.csv", back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(imported.RecordedWaits, back.RecordedWaits); diff != "" {
		t.Errorf("waits read back (-want +got):\n%s", diff)
	}
	if got := WaitsPath("out/week.csv"); got != "out/week.waits.csv" {
		t.Errorf("WaitsPath(out/week.csv) = %s", got)
	}
}

func TestReadWaitsMalformed(t *testing.T) {
	tr := &Trace{Jobs: []Job{{Team: "team-a", Name: "a"}, {Team: "team-b", Name: "b"}}}
	err := ReadWaits(strings.NewReader("name,team,recorded_wait\na,team-a,1m\nb,team-a,1m\nb,team-b,soon\na,team-a,2m\nb,team-b\n"), "trace.waits.csv", tr)
	assertImportProblems(t, err, []string{
		"trace.waits.csv:3: name: the trace has no job b of team team-a",
		`trace.waits.csv:4: recorded_wait: "soon" is not a wait`,
		"trace.waits.csv:5: name: job a of team team-a has two rows",
		"trace.waits.csv:6: the row has 2 columns",
	})
	if tr.RecordedWaits != nil {
		t.Errorf("a file with problems set waits %v", tr.RecordedWaits)
	}
	err = ReadWaits(strings.NewReader("job,team,wait\n"), "trace.waits.csv", tr)
	assertImportProblems(t, err, []string{`trace.waits.csv:1: the header is "job,team,wait"`})
}
