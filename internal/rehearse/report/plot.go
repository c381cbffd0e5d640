package report

import (
	"fmt"
	"html/template"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// line is one series of a chart.
type line struct {
	name   string
	points []Point
	// flat, when set, draws a constant (a quota) instead of points.
	flat   *float64
	dashed bool
}

// palette colours the lines of a chart in order.
var palette = []string{"#1f5f8b", "#d1495b", "#edae49", "#00798c", "#66a182", "#8d96a3", "#30343f", "#9b5de5"}

// lineChart draws step lines over trace time, hand-written SVG: the
// x axis in hours of trace time, the y axis from 0 to the largest value.
func lineChart(title, unit string, lines []line) template.HTML {
	const w, h, left, bottom, top, right = 640, 236, 56, 28, 42, 130
	end, peak := time.Duration(0), 0.0
	for _, l := range lines {
		for _, p := range l.points {
			end = max(end, time.Duration(p.T))
			peak = max(peak, p.V)
		}
		if l.flat != nil {
			peak = max(peak, *l.flat)
		}
	}
	if end == 0 || len(lines) == 0 {
		return ""
	}
	if peak == 0 {
		peak = 1
	}
	peak = niceCeil(peak)
	x := func(t Duration) float64 { return left + float64(w-left-right)*float64(t)/float64(end) }
	y := func(v float64) float64 { return top + float64(h-top-bottom)*(1-v/peak) }

	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s" font-family="sans-serif">`, w, h, template.HTMLEscapeString(title))
	fmt.Fprintf(&s, `<text x="0" y="16" font-weight="bold" font-size="14">%s</text>`, template.HTMLEscapeString(title))
	// Axes and ticks: four on each.
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		v := peak * float64(i) / 4
		fmt.Fprintf(&s, `<text x="%d" y="%.1f" font-size="11" text-anchor="end">%s</text>`, left-4, y(v)+4, trimFloat(v))
		fmt.Fprintf(&s, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, left, y(v), w-right, y(v))
		t := Duration(time.Duration(float64(end) * float64(i) / 4))
		fmt.Fprintf(&s, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>`, x(t), h-bottom+14, short(t))
	}
	fmt.Fprintf(&s, `<text x="%d" y="%d" font-size="11">%s</text>`, left, top-6, template.HTMLEscapeString(unit))
	for i, l := range lines {
		color := palette[i%len(palette)]
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="5,4"`
		}
		var d strings.Builder
		if l.flat != nil {
			fmt.Fprintf(&d, "M%.1f,%.1f H%.1f", x(0), y(*l.flat), x(Duration(end)))
		} else {
			for j, p := range l.points {
				if j == 0 {
					fmt.Fprintf(&d, "M%.1f,%.1f", x(p.T), y(p.V))
					continue
				}
				fmt.Fprintf(&d, " H%.1f V%.1f", x(p.T), y(p.V))
			}
		}
		fmt.Fprintf(&s, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, d.String(), color, dash)
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/>`, w-right+10, top+i*16, color)
		fmt.Fprintf(&s, `<text x="%d" y="%d" font-size="12">%s</text>`, w-right+24, top+i*16+9, template.HTMLEscapeString(l.name))
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
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
