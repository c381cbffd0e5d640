//go:build long

package rehearse_test

import (
	"testing"
	"time"

	"berth.io/berth/internal/rehearse/report"
)

// hpaSync is the HPA controller's sync period, kube-controller-manager's
// --horizontal-pod-autoscaler-sync-period default: the HPA looks at its
// metric at 0, 15 s, 30 s ... of the replay.
const hpaSync = 15 * time.Second

// TestRehearseInferenceScalesAndKeepsItsBudget replays the retail
// inference class's service (an HPA on rps, 20 a replica, 3 to 6
// replicas: berth new keeps one above the budget of minAvailable 2, so a
// replica can always be drained; the class's scale-down window of 10
// minutes, the default on a class with a GPU pool) through a traffic
// step, with its cpu pool replaced (blue/green, drained as berth drains
// it) while the traffic is high, and checks the Ready replicas the
// report records against the hand calculation, each at the clock's
// step:
//
//	0       20 rps: 20/20 = 1, the floor of 3 replicas, Ready at once
//	20m     100 rps: the HPA's sync at 20m sees it: 5 replicas, Ready at once
//	30m     the cpu pool replaced: a new node, every old one cordoned,
//	        drained through the Eviction API (the budget lets 3 of the 5
//	        go at a time) and deleted; simulated pods start at once on a
//	        node that provisions at once, so the drain is done by its
//	        first look back a clock step later
//	50m     20 rps: each sync from then on recommends 3, but the HPA
//	        keeps the highest recommendation of the last 10 minutes: 5
//	        until the sync at 49m45s, the last that saw 100 rps, is no
//	        longer within the window: at 59m45s
//	59m45s  3 replicas, to the end at 1h30m
//
//	mean    (20m×3 + 39m45s×5 + 30m15s×3) / 1h30m = 3.8833
//
// The service is never below its budget of 2: its time below budget is
// zero.
func TestRehearseInferenceScalesAndKeepsItsBudget(t *testing.T) {
	r := rehearseJSON(t, "-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-inference.yaml")
	if len(r.Services) != 1 || r.Series == nil {
		t.Fatalf("services %+v, series %v; want the one service and its replicas", r.Services, r.Series)
	}
	s := r.Services[0]
	pts := r.Series.Replicas["team-a/reco"]
	t.Logf("service %+v\nreplicas %+v\ndisruptions %+v", s, pts, r.Disruptions)

	down := 50*time.Minute - hpaSync + 10*time.Minute // the last 100 rps sync ages out
	want := []struct {
		at time.Duration
		v  float64
	}{{0, 3}, {20 * time.Minute, 5}, {down, 3}, {90 * time.Minute, 3}}
	if len(pts) != len(want) {
		t.Fatalf("the replica series is %+v; want the steps %+v", pts, want)
	}
	for i, w := range want {
		exactly(t, r, "replica step "+w.at.String(), time.Duration(pts[i].T), w.at)
		if pts[i].V != w.v {
			t.Errorf("at %s the service had %g Ready replicas; want %g", w.at, pts[i].V, w.v)
		}
	}
	mean := (20*time.Minute*3 + (down-20*time.Minute)*5 + (90*time.Minute-down)*3).Seconds() / (90 * time.Minute).Seconds()
	if d := s.MeanReplicas - mean; d > 1e-3 || d < -1e-3 {
		t.Errorf("the service's mean replicas is %.4f; the hand calculation gives %.4f", s.MeanReplicas, mean)
	}
	if s.PeakReplicas != 5 || s.MinAvailable != 2 || s.BelowBudget != 0 {
		t.Errorf("the service peaked at %d replicas, its budget %d, below it for %s; want 5, 2 and never", s.PeakReplicas, s.MinAvailable, time.Duration(s.BelowBudget))
	}
	if len(r.Disruptions) != 1 {
		t.Fatalf("disruptions %+v; want the trace's drain", r.Disruptions)
	}
	d := r.Disruptions[0]
	if d.Kind != report.KindDrain || d.Pool != "cpu" || len(d.Nodes) != 4 || d.Error != "" {
		t.Errorf("disruption %+v; want the cpu pool's 4 nodes replaced", d)
	}
	exactly(t, r, "the drain's start", time.Duration(d.At), 30*time.Minute)
	exactly(t, r, "the drain's length", time.Duration(d.Took), time.Second)
	cpu := r.Series.Nodes["cpu"]
	t.Logf("cpu nodes %+v", cpu)
	if len(cpu) < 3 || cpu[1].V != 5 || cpu[len(cpu)-1].V != 1 {
		t.Errorf("the cpu pool's nodes went %+v; want 4, 5 with the new node at 30m, then 1", cpu)
	}
}
