package rehearse

import (
	"maps"
	"slices"
	"sort"
	"time"

	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/rehearse/report"
)

// points turns a level's steps into trace-time points, up to stopped
// (where the last value is repeated, so a chart draws it to the end).
func (c timeline) points(l *level, stopped time.Time) []report.Point {
	out := make([]report.Point, 0, len(l.points)+1)
	for _, p := range l.points {
		if p.at.After(stopped) {
			break
		}
		out = append(out, report.Point{T: report.Duration(max(c.trace(p.at), 0)), V: p.v})
	}
	if n := len(out); n > 0 {
		out = append(out, report.Point{T: report.Duration(c.trace(stopped)), V: out[n-1].V})
	}
	return out
}

// series gathers the recorder's charts at stopped.
func (r *recorder) series(stopped time.Time, prices []prices.PoolPrice) *report.Series {
	s := &report.Series{Nodes: map[string][]report.Point{}, TeamGPUs: map[string][]report.Point{}, Quota: r.quota}
	for name, p := range r.pools {
		s.Nodes[name] = r.tl.points(&p.nodes, stopped)
	}
	s.Pending = r.tl.points(&r.pending, stopped)
	s.Waiting = r.tl.points(&r.waiting, stopped)
	for team, l := range r.teamGPUs {
		s.TeamGPUs[team] = r.tl.points(l, stopped)
	}
	s.Cost = accumulate(s.Nodes, prices)
	for _, sr := range r.services {
		end := stopped
		if !sr.removed.IsZero() {
			end = sr.removed
		}
		if s.Replicas == nil {
			s.Replicas = map[string][]report.Point{}
		}
		s.Replicas[sr.w.job.Team+"/"+sr.w.job.Name] = r.tl.points(&sr.ready, end)
	}
	return s
}

// accumulate is the cost of the pools' nodes so far at each moment one
// of them changed: each node-hour at its pool's price (spot for a Spot
// pool). Pools without a price add nothing.
func accumulate(nodes map[string][]report.Point, prices []prices.PoolPrice) []report.Point {
	perHour := map[string]float64{}
	for _, p := range prices {
		if p.Problem != nil {
			continue
		}
		price := p.OnDemand
		if p.Capacity == "Spot" {
			price = p.Spot
		}
		perHour[p.Pool] = float64(price) / 1e6
	}
	if len(perHour) == 0 {
		return nil
	}
	type change struct {
		t    report.Duration
		pool string
		v    float64
	}
	// In the pools' order, so that the sums are the same every run: a
	// float's sum depends on the order it is added in.
	pools := slices.Sorted(maps.Keys(nodes))
	var changes []change
	for _, pool := range pools {
		for _, p := range nodes[pool] {
			changes = append(changes, change{p.T, pool, p.V})
		}
	}
	sort.SliceStable(changes, func(a, b int) bool { return changes[a].t < changes[b].t })
	now := map[string]float64{}
	var out []report.Point
	spent, last := 0.0, report.Duration(0)
	for _, c := range changes {
		rate := 0.0
		for _, pool := range pools {
			rate += now[pool] * perHour[pool]
		}
		spent += rate * time.Duration(c.t-last).Hours()
		last = c.t
		now[c.pool] = c.v
		if n := len(out); n > 0 && out[n-1].T == c.t {
			continue // one point a moment: nothing was spent since
		}
		out = append(out, report.Point{T: c.t, V: spent})
	}
	return out
}
