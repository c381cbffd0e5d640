package report

import (
	"strings"
	"testing"
	"time"
)

// ResourceQuota against Kueue: each team's queue figures are rows, "-" on
// the design without queues; the designs are named by their queueing.
func TestCompareQueueings(t *testing.T) {
	rq := &Report{Blueprint: "retail-analytics"}
	kueue := &Report{Blueprint: "retail-analytics", Queueing: "Kueue", Queues: []QueueResult{
		{Team: "team-a", Suspended: Duration(90 * time.Minute), LentGPUHours: 3},
		{Team: "team-b", Suspended: Duration(30 * time.Minute), BorrowedGPUHours: 3, PreemptedReclaim: 2},
	}}
	rows := map[string]comparison{}
	for _, c := range compare(rq, kueue) {
		rows[c.Measure] = c
	}
	for measure, want := range map[string]comparison{
		"team-a job-hours suspended in its queue": {A: "-", B: "1.5"},
		"team-a GPU-hours lent":                   {A: "-", B: "3.0"},
		"team-b GPU-hours borrowed":               {A: "-", B: "3.0"},
		"team-b preemptions by reclaim":           {A: "-", B: "2"},
	} {
		got := rows[measure]
		got.Measure = ""
		if got != want {
			t.Errorf("%s: %+v; want %+v", measure, got, want)
		}
	}
	if a, b := Designs(rq, kueue); a != "retail-analytics (ResourceQuota)" || b != "retail-analytics (Kueue)" {
		t.Errorf("Designs: %q, %q", a, b)
	}
	if d := kueue.Design(); d != "retail-analytics (Kueue)" {
		t.Errorf("Design: %q", d)
	}
}

// A Kueue design's table has a QUEUE section; a ResourceQuota one has
// none.
func TestTableShowsQueuesUnderKueue(t *testing.T) {
	r := &Report{Blueprint: "retail-analytics", Queueing: "Kueue", Queues: []QueueResult{
		{Team: "team-b", Suspended: Duration(150 * time.Minute), SuspendedMax: Duration(time.Hour), BorrowedGPUHours: 12.25, PreemptedReclaim: 3, PreemptedPriority: 1},
	}}
	var out strings.Builder
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "team-b ") && strings.Contains(l, "12.2") {
			row = strings.Join(strings.Fields(l), " ")
		}
	}
	if !strings.Contains(out.String(), "QUEUE (Kueue)") || row != "team-b 2.5 1h 12.2 0.0 3 1 0" {
		t.Errorf("table:\n%s\nqueue row %q; want \"team-b 2.5 1h 12.2 0.0 3 1 0\"", out.String(), row)
	}
	r.Queueing, r.Queues = "", nil
	out.Reset()
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "QUEUE") {
		t.Errorf("a ResourceQuota design's table has a QUEUE section:\n%s", out.String())
	}
}
