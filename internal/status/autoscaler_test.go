package status

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/problem"
)

// The autoscaler's table: sizes per pool, the last scale-up and
// scale-down with their reasons, and nodes kept for the same reason on
// one line, the reason's fix indented beneath.
func TestRenderAutoscaler(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	atMin := problem.New("lower autoscale.min in the blueprint", "pool cpu is at its minimum of 4 (NodeGroupMinSizeReached)").String()
	a := &Autoscaler{
		Updated: now.Add(-2 * time.Second),
		Message: "scale-down waits: a scale-up 5s ago (scaleDownDelayAfterAdd 10m0s)",
		Pools: []castatus.PoolActivity{
			{Name: "cpu", Target: 4, Min: 4, Max: 8, Ready: 4, Blocked: []string{
				"cpu-0: " + atMin,
				"cpu-1: " + atMin,
			}},
			{Name: "spot-gpu", Target: 1, Max: 4, Upcoming: 1,
				LastScaleUp: &castatus.Event{Time: metav1.NewTime(now.Add(-4 * time.Second)), From: 0, To: 1, Reason: "1 pod waiting (team-a/train-x) fit 1 new node(s)"}},
		},
	}
	var b strings.Builder
	if err := renderAutoscaler(&b, a, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"AUTOSCALER (status written 2s ago): scale-down waits: a scale-up 5s ago",
		"spot-gpu  0/1           1         0-4      0→1 4s ago: 1 pod waiting (team-a/train-x) fit 1 new node(s)",
		"pool cpu keeps cpu-0, cpu-1: pool cpu is at its minimum of 4 (NodeGroupMinSizeReached)",
		"(NodeGroupMinSizeReached)\n    fix: lower autoscale.min in the blueprint\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if renderAutoscaler(&b, nil, now) != nil {
		t.Error("no autoscaler should print nothing and succeed")
	}
}
