package rehearse

import (
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
