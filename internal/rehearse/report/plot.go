package report

import (
	"html/template"
	"maps"
	"slices"
	"time"

	"berth.io/berth/internal/chart"
)

// line is one series of a chart over trace time.
type line struct {
	name   string
	points []Point
	// flat, when set, draws a constant (a quota) instead of points.
	flat   *float64
	dashed bool
}

// lineChart draws step lines over trace time (chart.Lines): the x axis in
// trace time, the y axis from 0 to the largest value.
func lineChart(title, unit string, lines []line) template.HTML {
	var out []chart.Line
	for _, l := range lines {
		c := chart.Line{Name: l.name, Flat: l.flat, Dashed: l.dashed}
		for _, p := range l.points {
			c.Points = append(c.Points, chart.Point{X: float64(p.T), Y: p.V})
		}
		out = append(out, c)
	}
	return chart.Lines(title, unit, func(x float64) string { return short(Duration(time.Duration(x))) }, out)
}

// charts are a rehearsal's plots: nodes per pool, pending pods and jobs
// waiting, GPUs per
// team against quota, each service's Ready replicas, cost accumulating.
func charts(r *Report) []template.HTML {
	s := r.Series
	if s == nil {
		return nil
	}
	var out []template.HTML
	var nodes []line
	for _, name := range slices.Sorted(maps.Keys(s.Nodes)) {
		nodes = append(nodes, line{name: name, points: s.Nodes[name]})
	}
	out = append(out, lineChart("Nodes per pool", "nodes", nodes))
	out = append(out, lineChart("Waiting: pods pending, jobs not yet running", "count", []line{
		{name: "pods pending", points: s.Pending},
		{name: "jobs waiting", points: s.Waiting},
	}))
	var gpus []line
	teams := slices.Sorted(maps.Keys(s.TeamGPUs))
	for _, team := range teams {
		gpus = append(gpus, line{name: team, points: s.TeamGPUs[team]})
	}
	for _, team := range teams {
		if q, ok := s.Quota[team]; ok {
			gpus = append(gpus, line{name: team + " quota", flat: &q, dashed: true})
		}
	}
	if len(gpus) > 0 {
		out = append(out, lineChart("GPUs held per team, against its quota", "GPUs", gpus))
	}
	if len(s.Replicas) > 0 {
		var replicas []line
		for _, name := range slices.Sorted(maps.Keys(s.Replicas)) {
			replicas = append(replicas, line{name: name, points: s.Replicas[name]})
		}
		out = append(out, lineChart("Ready replicas per service", "replicas", replicas))
	}
	if len(s.Cost) > 0 {
		out = append(out, lineChart("Cost so far", "US dollars", []line{{name: "cost", points: s.Cost}}))
	}
	return out
}
