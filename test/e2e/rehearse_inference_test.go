package e2e

import (
	"testing"
	"time"

	"berth.io/berth/internal/rehearse"
)

// TestRehearseInferenceScalesAndKeepsItsBudget replays the retail
// inference class's service (an HPA on rps, 20 a replica, 3 to 6
// replicas: berth new keeps one above the budget of minAvailable 2, so a
// replica can always be drained; the class's scale-down window of 10
// minutes, the default on a class with a GPU pool) through a traffic
// step, with its cpu pool's four nodes replaced (drained as berth drains
// them) while the traffic is high, and checks the Ready replicas the
// report records against the hand calculation:
//
//	0       20 rps: 20/20 = 1, the floor of 3 replicas, Ready once started
//	20m     100 rps: 100/20 = 5 replicas
//	30m     the cpu pool drained: every node cordoned, each drained through
//	        the Eviction API (the budget lets 3 of the 5 go at a time) and
//	        deleted; the autoscaler adds nodes for the evicted pods
//	50m     20 rps: the HPA wants 3, but holds 5 for the 10m window
//	60m     3 replicas, to the end at 1h30m
//
// Through the drain the service never has fewer than 2 Ready replicas
// once it first had them: its time below budget is its start-up alone.
func TestRehearseInferenceScalesAndKeepsItsBudget(t *testing.T) {
	const speed = 60
	r := rehearseJSON(t, "-f", "testdata/rehearse-retail.yaml", "--trace", "testdata/rehearse-inference.yaml", "--speed", "60")
	slack := 3*time.Minute + 3*time.Duration(r.SubmitLag)*speed
	if len(r.Services) != 1 || r.Series == nil {
		t.Fatalf("services %+v, series %v; want the one service and its replicas", r.Services, r.Series)
	}
	s := r.Services[0]
	pts := r.Series.Replicas["team-a/reco"]
	t.Logf("service %+v\nreplicas %+v\ndisruptions %+v", s, pts, r.Disruptions)
	if len(pts) == 0 {
		t.Fatalf("the report has no replica series for team-a/reco: %v", r.Series.Replicas)
	}
	// ready is the Ready replicas at trace time at.
	ready := func(at time.Duration) float64 {
		v := 0.0
		for _, p := range pts {
			if time.Duration(p.T) > at {
				break
			}
			v = p.V
		}
		return v
	}
	var reached time.Duration = -1 // when it first had 2 Ready
	for _, p := range pts {
		if reached < 0 && p.V >= 2 {
			reached = time.Duration(p.T)
		}
		if reached >= 0 && p.V < 2 {
			t.Errorf("at %s the service had %g Ready replicas, below its budget of 2", p.T, p.V)
		}
	}
	if reached < 0 || reached > slack {
		t.Fatalf("the service first had 2 Ready replicas at %s; want at its start", time.Duration(reached))
	}
	if s.MinAvailable != 2 || time.Duration(s.BelowBudget) > reached+time.Second*speed {
		t.Errorf("the service was below its budget of %d for %s; want its start-up alone (%s)", s.MinAvailable, s.BelowBudget, reached)
	}
	for _, c := range []struct {
		at   time.Duration
		want float64
		why  string
	}{
		{20*time.Minute - slack, 3, "20 rps, the floor"},
		{20*time.Minute + slack, 5, "100 rps"},
		{50*time.Minute + slack, 5, "20 rps again, but within the 10m scale-down window"},
		{60*time.Minute - slack, 5, "within the window"},
		{60*time.Minute + slack, 3, "the window has passed"},
		{90 * time.Minute, 3, "20 rps, the floor"},
	} {
		if got := ready(c.at); got != c.want {
			t.Errorf("at %s the service had %g Ready replicas; want %g (%s)", c.at, got, c.want, c.why)
		}
	}
	if s.PeakReplicas != 5 {
		t.Errorf("the service peaked at %d Ready replicas; want 5", s.PeakReplicas)
	}
	if len(r.Disruptions) != 1 {
		t.Fatalf("disruptions %+v; want the trace's drain", r.Disruptions)
	}
	d := r.Disruptions[0]
	if d.Kind != rehearse.KindDrain || d.Pool != "cpu" || len(d.Nodes) != 4 || d.Error != "" || d.Took == 0 || time.Duration(d.At) < 30*time.Minute || time.Duration(d.At)+time.Duration(d.Took) > 50*time.Minute {
		t.Errorf("disruption %+v; want the cpu pool's 4 nodes drained from 30m, done before the traffic falls at 50m", d)
	}
}
