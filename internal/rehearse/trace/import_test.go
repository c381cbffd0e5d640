package trace

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/problem"
)

const (
	alibabaJobs  = "testdata/alibaba-synthetic/pai_job_table.csv"
	alibabaTasks = "testdata/alibaba-synthetic/pai_task_table.csv"
	phillyLog    = "testdata/philly-synthetic/cluster_job_log"
)

func importAlibaba(t *testing.T, jobs, tasks string, opts ImportOptions) (*Trace, ImportReport, error) {
	t.Helper()
	return ImportAlibaba(strings.NewReader(jobs), strings.NewReader(tasks), "pai_job_table.csv", "pai_task_table.csv", opts)
}

func alibabaOptions() ImportOptions {
	return ImportOptions{
		TeamMap:    map[string]string{"58540f191766": "team-a", "a1b2c3d4e5f6": "team-b"},
		From:       time.Unix(4550000, 0),
		To:         time.Unix(4560000, 0),
		Checkpoint: 30 * time.Minute,
	}
}

func TestImportAlibaba(t *testing.T) {
	got, report, err := importAlibaba(t, readFile(t, alibabaJobs), readFile(t, alibabaTasks), alibabaOptions())
	if err != nil {
		t.Fatal(err)
	}
	q := resource.MustParse
	const f = "pai_task_table.csv"
	s := time.Second
	want := &Trace{Start: time.Unix(4550000, 0), Jobs: []Job{
		{Submit: 0, Team: "team-a", Kind: Training, Name: "0a1b2c3d4e5f60718293a4b5-tensorflow", Pods: 1, GPUs: 1, CPU: q("6"), Memory: q("30000Mi"), Duration: time.Hour, Checkpoint: 30 * time.Minute, File: f, Line: 1},
		{Submit: 600 * s, Team: "team-a", Kind: Training, Name: "1b2c3d4e5f60718293a4b5c6-ps", Pods: 1, CPU: q("8"), Memory: q("16Gi"), Duration: 7300 * s, Checkpoint: 30 * time.Minute, File: f, Line: 2},
		{Submit: 600 * s, Team: "team-a", Kind: Training, Name: "1b2c3d4e5f60718293a4b5c6-worker", Pods: 4, GPUs: 1, CPU: q("6"), Memory: q("30Gi"), Duration: 7300 * s, Checkpoint: 30 * time.Minute, File: f, Line: 3},
		// plan_gpu 50: half a GPU is a whole one.
		{Submit: 1200 * s, Team: "team-b", Kind: Training, Name: "2c3d4e5f60718293a4b5c6d7-pytorchworker", Pods: 1, GPUs: 1, CPU: q("4"), Memory: q("12800Mi"), Duration: 30 * time.Minute, File: f, Line: 4},
		{Submit: 1800 * s, Team: "team-b", Kind: Training, Name: "3d4e5f60718293a4b5c6d7e8-worker", Pods: 2, GPUs: 8, CPU: q("12"), Memory: q("64Gi"), Duration: 15 * time.Minute, File: f, Line: 5},
		{Submit: 4200 * s, Team: "team-b", Kind: Training, Name: "8293a4b5c6d7e8f90a1b2c3d-xgboost", Pods: 2, CPU: q("16"), Memory: q("8Gi"), Duration: 20 * time.Minute, File: f, Line: 10},
		{Submit: 5000 * s, Team: "team-a", Kind: Training, Name: "93a4b5c6d7e8f90a1b2c3d4e-evaluator", Pods: 1, GPUs: 1, CPU: q("2"), Memory: q("4Gi"), Duration: 5 * time.Minute, File: f, Line: 11},
		{Submit: 6000 * s, Team: "team-b", Kind: Training, Name: "a4b5c6d7e8f90a1b2c3d4e5f-worker", Pods: 8, GPUs: 1, CPU: q("8"), Memory: q("40Gi"), Duration: 90 * time.Minute, Checkpoint: 30 * time.Minute, File: f, Line: 12},
		{Submit: 9999 * s, Team: "team-a", Kind: Training, Name: "b5c6d7e8f90a1b2c3d4e5f60-worker", Pods: 1, GPUs: 1, CPU: q("6"), Memory: q("30000Mi"), Duration: 2 * time.Minute, File: f, Line: 13},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Trace{})); diff != "" {
		t.Errorf("ImportAlibaba (-want +got):\n%s", diff)
	}
	wantReport := ImportReport{Read: 16, Kept: 9, RoundedGPUs: 2, Dropped: map[string]int{
		droppedUnfinished: 2, droppedTeam: 1, droppedWindow: 2, droppedNoSubmit: 1, droppedNoJob: 1,
	}}
	if diff := cmp.Diff(wantReport, report); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	// The trace keeps the hour of the day in UTC+8: 4550000 s is 52
	// days and 15:53:20 UTC.
	if got.Start.Format("15:04:05 -0700") != "23:53:20 +0800" {
		t.Errorf("the trace starts at %s, want 23:53:20 in UTC+8", got.Start)
	}
	// On the retail blueprint the import checks clean but for what retail
	// has no room for: CPU-only tasks as training (its training class is
	// GPU-only), and a task of 8 GPUs a pod.
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, p := range got.Check(bp) {
		where = append(where, p.Where()+" "+p.Field)
	}
	if diff := cmp.Diff([]string{f + ":2 gpus", f + ":5 gpus", f + ":5 gpus", f + ":10 gpus"}, where); diff != "" {
		t.Errorf("Check on retail (-want +got):\n%s", diff)
	}
}

// Owners the team map lacks go to the default team when there is one;
// without a window every job is kept, and the trace starts at the first.
func TestImportAlibabaDefaultTeam(t *testing.T) {
	got, report, err := importAlibaba(t, readFile(t, alibabaJobs), readFile(t, alibabaTasks), ImportOptions{DefaultTeam: "team-a", Kind: Batch})
	if err != nil {
		t.Fatal(err)
	}
	if report.Kept != 12 || report.Dropped[droppedTeam] != 0 || report.Dropped[droppedWindow] != 0 {
		t.Errorf("report %s, want 12 kept, none dropped for their team or window", report)
	}
	if !got.Start.Equal(time.Unix(4540000, 0)) || got.Jobs[0].Kind != Batch || got.Jobs[0].Team != "team-a" {
		t.Errorf("first job %+v of a trace starting %s, want the batch job at 4540000 s, of team-a", got.Jobs[0], got.Start)
	}
	if want := "read 16, kept 12; dropped 1 of jobs without a submission time, 1 of tasks whose job pai_job_table lacks, 2 without a start or an end (still running, waiting, or never run); 2 rounded up to whole GPUs"; report.String() != want {
		t.Errorf("report.String()\n got: %s\nwant: %s", report, want)
	}
}

// A row not in the published layout is a problem at its line, and every
// such row of both tables is found in one pass.
func TestImportAlibabaMalformed(t *testing.T) {
	jobs, tasks := readFile(t, alibabaJobs), readFile(t, alibabaTasks)
	jobs = strings.Replace(jobs, "a1b2c3d4e5f6,Terminated,4551200.0", "a1b2c3d4e5f6,Terminated,yesterday", 1)
	tasks = strings.Replace(tasks, "worker,8.0,Terminated,4556060.0,4561460.0,800.0,40.0,100.0,V100", "worker,8.0,Terminated,4556060.0,4561460.0,800.0,40GB,100.0,V100", 1)
	tasks = strings.Replace(tasks, "xgboost,2.0,Terminated,4554260.0,4555460.0,1600.0,8.0,,", "xgboost,2.0,Terminated,4554260.0", 1)
	_, _, err := importAlibaba(t, jobs, tasks, alibabaOptions())
	assertImportProblems(t, err, []string{
		`pai_job_table.csv:3: start_time: "yesterday" is not a number`,
		"pai_task_table.csv:10: the row has 5 columns; the table has 10",
		`pai_task_table.csv:12: plan_mem: "40GB" is not a number`,
	})
}

// The published tables have no header row; one pasted in from the
// .header files is read as a header, not as a job.
func TestImportAlibabaHeader(t *testing.T) {
	jobs := strings.Join(alibabaJobColumns, ",") + "\n" + readFile(t, alibabaJobs)
	tasks := strings.Join(alibabaTaskColumns, ",") + "\n" + readFile(t, alibabaTasks)
	_, report, err := importAlibaba(t, jobs, tasks, alibabaOptions())
	if err != nil || report.Kept != 9 {
		t.Errorf("with header rows: %s, %v; want the 9 jobs kept without them", report, err)
	}
}

func TestImportPhilly(t *testing.T) {
	f, err := os.Open(phillyLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	day := time.Date(2017, 10, 2, 0, 0, 0, 0, time.UTC)
	got, report, err := ImportPhilly(f, "cluster_job_log", ImportOptions{
		TeamMap: map[string]string{"a11ce0": "team-a", "b0b000": "team-b"},
		From:    day, To: day.Add(24 * time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	const file = "cluster_job_log"
	want := &Trace{Start: day, Jobs: []Job{
		{Submit: 8 * time.Hour, Team: "team-a", Kind: Training, Name: "application-1500000000000-0001", Pods: 1, GPUs: 1, Duration: time.Hour, File: file, Line: 2},
		// Two attempts: the run is both.
		{Submit: 8*time.Hour + 10*time.Minute, Team: "team-a", Kind: Training, Name: "application-1500000000000-0002", Pods: 1, GPUs: 4, Duration: 2*time.Hour + 10*time.Minute, File: file, Line: 23},
		{Submit: 8*time.Hour + 20*time.Minute, Team: "team-b", Kind: Training, Name: "application-1500000000000-0003", Pods: 2, GPUs: 8, Duration: 30 * time.Minute, File: file, Line: 62},
		// 8 and 4 GPUs on two machines: 6 a pod.
		{Submit: 8*time.Hour + 30*time.Minute, Team: "team-b", Kind: Training, Name: "application-1500000000000-0004", Pods: 2, GPUs: 6, Duration: 45 * time.Minute, File: file, Line: 103},
		// The first attempt has no end: the second is the run.
		{Submit: 8*time.Hour + 59*time.Minute, Team: "team-b", Kind: Training, Name: "application-1500000000000-0010", Pods: 1, GPUs: 2, Duration: 30 * time.Minute, File: file, Line: 233},
		{Submit: 12 * time.Hour, Team: "team-b", Kind: Training, Name: "application-1500000000000-0012", Pods: 1, GPUs: 1, Duration: 3 * time.Hour, File: file, Line: 282},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Trace{})); diff != "" {
		t.Errorf("ImportPhilly (-want +got):\n%s", diff)
	}
	wantReport := ImportReport{Read: 14, Kept: 6, Dropped: map[string]int{
		droppedUnfinished: 3, droppedTeam: 1, droppedWindow: 2, droppedNoMachine: 1, droppedNoSubmit: 1,
	}}
	if diff := cmp.Diff(wantReport, report); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// A job not in the published layout is a problem at its line; after a
// JSON syntax error nothing more can be read.
func TestImportPhillyMalformed(t *testing.T) {
	log := readFile(t, phillyLog)
	for _, tc := range []struct {
		name, old, new string
		want           []string
	}{
		{"a time", `"submitted_time": "2017-10-02 08:20:00"`, `"submitted_time": "2017-10-02T08:20:00Z"`,
			[]string{`cluster_job_log:62: submitted_time: "2017-10-02T08:20:00Z" is not a time like 2017-10-07 01:11:39`}},
		{"an attempt's time and a type", `"end_time": "2017-10-02 08:21:00"`, `"end_time": "08:21"`,
			[]string{`cluster_job_log:23: attempts[0].end_time: "08:21" is not a time`}},
		{"a type", `"jobid": "application_1500000000000_0012"`, `"jobid": 12`,
			[]string{"cluster_job_log:282: jobid: json: cannot unmarshal number"}},
		{"syntax", `"vc": "b0b000",
        "jobid": "application_1500000000000_0004"`, `"vc": "b0b000"
        "jobid": "application_1500000000000_0004"`,
			[]string{"cluster_job_log:106: invalid JSON: invalid character '\"' after object key:value pair"}},
		{"not a list", "[\n", "{\n", []string{"cluster_job_log:1: the log is not a JSON list of jobs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(log, tc.old) {
				t.Fatalf("%s lacks %q", phillyLog, tc.old)
			}
			_, _, err := ImportPhilly(strings.NewReader(strings.Replace(log, tc.old, tc.new, 1)), "cluster_job_log", ImportOptions{DefaultTeam: "team-a"})
			assertImportProblems(t, err, tc.want)
		})
	}
}

// assertImportProblems checks that err is exactly the wanted problems,
// each "FILE:LINE: FIELD: message-prefix" and with a fix.
func assertImportProblems(t *testing.T, err error, want []string) {
	t.Helper()
	list, ok := err.(problem.List)
	if !ok {
		t.Fatalf("error %v (%T), want a problem.List", err, err)
	}
	if len(list) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(list), len(want), list)
	}
	for i, p := range list {
		if !strings.HasPrefix(p.String(), want[i]) || p.Fix == "" {
			t.Errorf("problem %d:\n%s\nwant %q with a fix", i, p, want[i])
		}
	}
}
