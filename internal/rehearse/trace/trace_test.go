package trace

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/internal/problem"
)

// retailJobs are the jobs of testdata/retail.csv, in submit order, with
// the lines of the CSV form.
func retailJobs(file string) []Job {
	q := resource.MustParse
	return []Job{
		{Submit: 0, Team: "team-a", Kind: Inference, Name: "recommender", Pods: 2, GPUs: 1, CPU: q("4"), Memory: q("16Gi"), Class: "inference", Model: "reco@production", File: file, Line: 4},
		{Submit: 0, Team: "team-a", Kind: Training, Name: "ranker-ft", Pods: 1, GPUs: 1, CPU: q("8"), Memory: q("32Gi"), Duration: time.Hour, Checkpoint: 15 * time.Minute, File: file, Line: 5},
		{Submit: 5 * time.Minute, Team: "team-b", Kind: Training, Name: "churn", Pods: 1, GPUs: 1, Duration: 45 * time.Minute, Class: "training", File: file, Line: 6},
		{Submit: 10 * time.Minute, Team: "team-a", Kind: Batch, Name: "etl-daily", Pods: 4, CPU: q("2"), Memory: q("8Gi"), Duration: 20 * time.Minute, Class: "batch", File: file, Line: 7},
		{Submit: 30 * time.Minute, Team: "team-a", Kind: Training, Name: "bert-large", Pods: 4, GPUs: 1, CPU: q("8"), Memory: q("32Gi"), Duration: 6 * time.Hour, Checkpoint: 30 * time.Minute, Class: "training", File: file, Line: 8},
		{Submit: time.Hour, Team: "team-b", Kind: Batch, Name: "embeddings", Pods: 2, GPUs: 1, CPU: q("4"), Memory: q("16Gi"), Duration: 30 * time.Minute, Class: "batch-inference", File: file, Line: 9},
		{Submit: 90 * time.Minute, Team: "team-a", Kind: Inference, Name: "search", Pods: 1, CPU: q("1"), Memory: q("2Gi"), Duration: 2 * time.Hour, Class: "inference", File: file, Line: 10},
	}
}

var retailStart = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)

// ignoreLines compares traces without where they were read from.
var ignoreLines = cmp.Options{cmpopts.IgnoreFields(Job{}, "File", "Line"), cmpopts.IgnoreUnexported(Trace{})}

func TestReadCSV(t *testing.T) {
	got, err := Read("testdata/retail.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := &Trace{Start: retailStart, Jobs: retailJobs("testdata/retail.csv")}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Trace{})); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
	if got.End() != 6*time.Hour+30*time.Minute {
		t.Errorf("End() = %s, want bert-large's end, 6h30m", got.End())
	}
}

// The YAML form holds the CSV's jobs, and the load and queues besides.
func TestReadYAML(t *testing.T) {
	got, err := Read("testdata/retail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Trace{
		Start: retailStart,
		Jobs:  retailJobs("testdata/retail.yaml"),
		Load: &metricsapi.Profile{Steps: []metricsapi.Step{
			{At: metav1.Duration{}, Workloads: []metricsapi.WorkloadLoad{{Namespace: "team-a", Kind: "Deployment", Name: "recommender", RPS: ptr.To(40.0)}}},
			{At: metav1.Duration{Duration: time.Hour}, Queues: map[string]int64{"batch-inference": 100}},
			{At: metav1.Duration{Duration: 3 * time.Hour}, Workloads: []metricsapi.WorkloadLoad{{Namespace: "team-a", Kind: "Deployment", Name: "recommender", RPS: ptr.To(10.0)}}},
		}},
		Queues:        []Queue{{Name: "batch-inference", ItemTime: 30 * time.Second, Line: 33}},
		Interruptions: []Interruption{{At: 40 * time.Minute, Pool: "spot-gpu", Line: 35}},
		Drains:        []Drain{{At: 2 * time.Hour, Pool: "cpu", Line: 37}},
	}
	if diff := cmp.Diff(want, got, ignoreLines); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
	lines := map[string]int{}
	for _, j := range got.Jobs {
		lines[j.Name] = j.Line
	}
	if lines["recommender"] != 8 || lines["churn"] != 10 || lines["search"] != 21 {
		t.Errorf("lines %v, want each job at its line of the file (recommender 8, churn 10, search 21)", lines)
	}
}

// Submits are offsets or times; a trace that does not say its start
// must write them all one way.
func TestSubmitOffsetsAndTimes(t *testing.T) {
	const header = Header + "\n"
	row := func(submit, name string) string {
		return submit + ",team-a,training," + name + ",1,1,,,1h,,,\n"
	}
	for _, tc := range []struct {
		name, data string
		start      time.Time
		submits    []time.Duration
		problem    string
	}{
		{name: "offsets without a start", data: header + row("2h", "a") + row("0s", "b"), submits: []time.Duration{0, 2 * time.Hour}},
		{name: "times without a start start at the first", data: header + row("2026-01-05T10:00:00Z", "a") + row("2026-01-05T09:30:00+00:00", "b"),
			start: time.Date(2026, 1, 5, 9, 30, 0, 0, time.UTC), submits: []time.Duration{0, 30 * time.Minute}},
		{name: "mixed with a start", data: "# start: 2026-01-05T09:00:00Z\n" + header + row("2026-01-05T10:00:00Z", "a") + row("15m", "b"),
			start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC), submits: []time.Duration{15 * time.Minute, time.Hour}},
		{name: "mixed without a start", data: header + row("2026-01-05T10:00:00Z", "a") + row("15m", "b"), problem: "t.csv:3: submit: 15m mixes an offset and a time"},
		{name: "a time before the start", data: "# start: 2026-01-05T09:00:00Z\n" + header + row("2026-01-05T08:00:00Z", "a"), problem: "t.csv:3: submit: 2026-01-05T08:00:00Z is before the trace's start"},
		{name: "a negative offset", data: header + row("-5m", "a"), problem: "t.csv:2: submit: -5m is before the trace's start"},
		{name: "a start that is no time", data: "# start: Monday\n" + header + row("0s", "a"), problem: `t.csv:1: start: "Monday" is not an RFC 3339 time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("t.csv", []byte(tc.data))
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("Parse error %v, want %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Start.Equal(tc.start) {
				t.Errorf("Start = %s, want %s", got.Start, tc.start)
			}
			var submits []time.Duration
			for _, j := range got.Jobs {
				submits = append(submits, j.Submit)
			}
			if diff := cmp.Diff(tc.submits, submits); diff != "" {
				t.Errorf("submits in order (-want +got):\n%s", diff)
			}
		})
	}
}

// Every problem of a CSV file is found in one pass, each at its line and
// column, with a fix.
func TestCSVProblems(t *testing.T) {
	data, err := os.ReadFile("testdata/retail.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		old, new string
		want     []string // "LINE FIELD message prefix"
	}{
		{"header", "submit,team,kind,name,pods,gpus,cpu,memory,duration,checkpoint,class,model", "submit,team,kind,name,pods,gpu,cpu,memory,duration,checkpoint,class,model",
			[]string{`3  the header is "submit,team,kind,name,pods,gpu,`}},
		{"kind", "0s,team-a,training,ranker-ft", "0s,team-a,trainig,ranker-ft", []string{`5 kind "trainig" is not training, batch or inference`}},
		{"fraction of a GPU", "5m,team-b,training,churn,1,1,", "5m,team-b,training,churn,1,0.5,", []string{"6 gpus 0.5 is part of a GPU"}},
		{"quantity", ",4,,2,8Gi,", ",4,,2 cores,8Gi,", []string{`7 cpu "2 cores" is not a quantity`}},
		{"name and pods", "30m,team-a,training,bert-large,4,", "30m,team-a,training,BERT,0,",
			[]string{`8 name "BERT" is not a DNS-1123 label`, `8 pods "0" is not a whole number of 1 or more`}},
		{"checkpoint not below the run time", "6h,30m,training", "6h,6h,training", []string{"8 checkpoint 6h is not less than the run time, 6h"}},
		{"no run time", "16Gi,30m,,batch-inference", "16Gi,,,batch-inference", []string{"9 duration a batch row needs a run time"}},
		{"duplicate name in a team", "1h30m,team-a,inference,search", "1h30m,team-a,inference,recommender",
			[]string{"10 name team team-a has a row named recommender already, on line 4"}},
		{"model on a job", "1h,15m,,", "1h,15m,,bert@best", []string{"5 model a model is for inference rows"}},
		{"missing column", ",inference,reco@production", ",inference", []string{"4  the row has 11 columns, the header 12"}},
		{"every problem of the file", "0s,team-a,training,ranker-ft,1,1,8,32Gi,1h,15m,,\n5m,team-b,training,churn,1,1,,,45m,,training,\n",
			"0s,team-a,trainig,ranker-ft,1,1,8,32Gi,1h,15m,,\n5m,team-b,training,churn,1,1,,,45m,,training,\n5m,team-b,training,churn,1,1,,,45m,,training,\n",
			[]string{`5 kind "trainig"`, "7 name team team-b has a row named churn already, on line 6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(data), tc.old) {
				t.Fatalf("testdata/retail.csv lacks %q", tc.old)
			}
			_, err := Parse("retail.csv", []byte(strings.Replace(string(data), tc.old, tc.new, 1)))
			assertProblems(t, err, "retail.csv", tc.want)
		})
	}
}

// Problems of the YAML form name the field path and its line.
func TestYAMLProblems(t *testing.T) {
	data, err := os.ReadFile("testdata/retail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		old, new string
		want     []string
	}{
		{"unknown field", "    gpus: 1\n    duration: 45m", "    gpu: 1\n    duration: 45m", []string{`15 spec.jobs[2].gpu unknown field "gpu"`}},
		{"row value", "    pods: 1\n", "    pods: one\n", []string{`14 spec.jobs[2].pods "one" is not a whole number`}},
		{"kind", "kind: Trace", "kind: Blueprint", []string{"4 kind must be Trace"}},
		{"load out of order", "  - at: 3h", "  - at: 30m", []string{"29 spec.load.steps[2].at 30m0s comes before the step above it"}},
		{"load of no service", "name: recommender, rps: 10", "name: recomender, rps: 10", []string{"31 spec.load.steps[2].workloads[0].name no inference row of the trace is named recomender"}},
		{"queue the load never fills", "{name: batch-inference, itemTime: 30s}", "{name: images, itemTime: 0s}",
			[]string{"33 spec.queues[0].name no step of spec.load fills queue images", "33 spec.queues[0].itemTime an item's processing time must be more than zero"}},
		{"item time", "itemTime: 30s", "itemTime: half a minute", []string{`33 spec.queues[0].itemTime "half a minute" is not a duration`}},
		{"syntax", "    kind: training\n", "    kind: [training\n", []string{"12  invalid YAML"}},
		{"worker's class without its team", "{name: batch-inference, itemTime: 30s}", "{name: batch-inference, itemTime: 30s, class: batch-inference}", []string{"33 spec.queues[0].team queue batch-inference names its worker's class and no team"}},
		{"interruption at a time", "{at: 40m, pool: spot-gpu}", "{at: 2026-01-05T08:40:00Z, pool: spot-gpu}", []string{`35 spec.interruptions[0].at "2026-01-05T08:40:00Z" is not an offset from the trace's start`}},
		{"interruption without a pool", "{at: 40m, pool: spot-gpu}", "{at: 40m}", []string{"35 spec.interruptions[0].pool the pool is required"}},
		{"interruptions out of order", "{at: 40m, pool: spot-gpu}", "{at: 40m, pool: spot-gpu}\n  - {at: 30m, pool: spot-gpu}", []string{"36 spec.interruptions[1].at 30m0s comes before the entry above it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(data), tc.old) {
				t.Fatalf("testdata/retail.yaml lacks %q", tc.old)
			}
			_, err := Parse("retail.yaml", []byte(strings.Replace(string(data), tc.old, tc.new, 1)))
			assertProblems(t, err, "retail.yaml", tc.want)
		})
	}
}

// assertProblems checks that err is a problem.List of exactly the wanted
// problems, each "LINE FIELD message-prefix", in file file, with a fix.
func assertProblems(t *testing.T, err error, file string, want []string) {
	t.Helper()
	list, ok := err.(problem.List)
	if !ok {
		t.Fatalf("error %v (%T), want a problem.List", err, err)
	}
	if len(list) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(list), len(want), list)
	}
	for i, p := range list {
		got := strings.Join([]string{strconv.Itoa(p.Line), p.Field, p.Message}, " ")
		if !strings.HasPrefix(got, want[i]) || p.File != file || p.Fix == "" {
			t.Errorf("problem %d:\n%s\n(line, field, message %q; file %q)\nwant %q in %s with a fix", i, p, got, p.File, want[i], file)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
