package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A group none of whose jobs ran in one design has no p95 wait there:
// the chart draws no bar for that side and writes "-", not a bar of 0s.
func TestWaitChartDrawsNoBarForAGroupThatNeverRan(t *testing.T) {
	a := &Report{Groups: []GroupResult{{Team: "ml", Class: "training", Jobs: 2, WaitP95: Duration(70 * time.Minute)}}}
	b := &Report{Groups: []GroupResult{{Team: "ml", Class: "training", Jobs: 2, NeverRan: 2}}}
	svg := string(waitChart(a, b))
	if n := strings.Count(svg, "<rect"); n != 1 {
		t.Errorf("the chart has %d bars; want 1, A's (B's jobs never ran):\n%s", n, svg)
	}
	if strings.Contains(svg, ">0s<") {
		t.Errorf("the chart writes a wait of 0s for B, whose jobs never ran:\n%s", svg)
	}
	if !strings.Contains(svg, ">-<") || !strings.Contains(svg, ">1h10m<") {
		t.Errorf("the chart lacks A's 1h10m or B's \"-\":\n%s", svg)
	}
}

// The page renders a report, one design or two, with its clock's steps
// and its tolerance: a template that names a field the report lacks
// fails here, not in a user's rehearsal.
func TestPageRendersAReport(t *testing.T) {
	cost, wait := 0.005, Duration(10*time.Minute)
	rep := func(name string) *Report {
		return &Report{
			Blueprint: name, Trace: "week.csv", Seed: 1, Rehearsed: Duration(time.Hour), Tolerance: Duration(time.Second),
			Clock:  ClockReport{Step: Duration(time.Second), Steps: 737, Settling: Duration(2 * time.Second)},
			Groups: []GroupResult{{Team: "ml", Class: "training", Jobs: 1, Completed: 1, WaitP50: Duration(10 * time.Minute)}},
			Pools:  []PoolResult{{Name: "gpu", NodeHours: 1.5}},
			Storage: []StorageResult{{Class: "standard", Volumes: 1, PeakGiB: 50, GiBHours: 50, Cost: &cost},
				{Class: "files", Volumes: 1, PeakGiB: 10, GiBHours: 10}},
			Jobs:   []JobResult{{Team: "ml", Name: "bert", Claimed: true, Replacements: 1, ReplacementWait: &wait}},
			Series: &Series{Nodes: map[string][]Point{"gpu": {{T: 0, V: 0}, {T: Duration(time.Hour), V: 1}}}},
			Queues: []QueueResult{{Team: "ml", Suspended: Duration(90 * time.Minute), SuspendedMax: Duration(time.Hour), BorrowedGPUHours: 2, PreemptedReclaim: 1}},
		}
	}
	for _, b := range []*Report{nil, rep("b")} {
		dir := t.TempDir()
		if err := WriteDir(dir, rep("a"), b); err != nil {
			t.Fatalf("writing the page: %v", err)
		}
		page, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"exact to 1s", "737 steps of 1s", "<td>standard</td><td>1</td><td>50</td><td>50.0</td><td>$0.01</td>",
			"- (no pricePerGiBMonth)", "<td>ml</td><td>1.5</td><td>1h</td><td>2.0</td><td>0.0</td><td>1</td><td>0</td><td>0</td>", "1 replacement pods, each held to its checkpoint volume&#39;s zone; they waited 10m"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("the page lacks %q", want)
			}
		}
	}
}
