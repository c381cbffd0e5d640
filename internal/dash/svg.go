package dash

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"berth.io/berth/internal/chart"
)

var funcs = template.FuncMap{
	"bar":   bar,
	"spark": spark,
	"pct":   func(f float64) string { return strconv.Itoa(int(math.Round(f*100))) + "%" },
	"level": level,
	"ago":   ago,
	"join":  strings.Join,
	"first": short,
}

// bar draws a usage bar (chart.Usage). The figures are written beside
// it by the template and named in its label, so the colour is never the
// only sign of how full it is.
func bar(u Usage) template.HTML { return chart.Usage(u.Used, u.Total, u.Fraction) }

// level names how full a fraction is: ok, high (from 80%), full (100%).
func level(f float64) string { return chart.Level(f) }

// spark draws an HPA's replicas (solid) and metric (dashed) over the
// last hour, each scaled to its own maximum, the metric's target as a
// dotted line.
func spark(row HPARow, now time.Time) template.HTML {
	const w, h = 240.0, 48.0
	x := func(t time.Time) float64 {
		return w - w*now.Sub(t).Seconds()/historyWindow.Seconds()
	}
	maxR := float64(row.Max)
	maxM := row.Goal
	for _, s := range row.Samples {
		maxR = math.Max(maxR, float64(s.Replicas))
		maxM = math.Max(maxM, s.Metric)
	}
	y := func(v, top float64) float64 {
		if top <= 0 {
			return h - 1
		}
		return h - 1 - (h-2)*v/top
	}
	s := chart.Spark{W: w, H: h, Label: fmt.Sprintf("replicas %d now, range %d-%d, over the last hour", row.Current, row.Min, row.Max)}
	for _, p := range row.Samples {
		s.Replicas = append(s.Replicas, chart.Point{X: x(p.Time), Y: y(float64(p.Replicas), maxR)})
		if p.Known {
			s.Metric = append(s.Metric, chart.Point{X: x(p.Time), Y: y(p.Metric, maxM)})
		}
	}
	if row.Goal > 0 {
		goal := y(row.Goal, maxM)
		s.Goal = &goal
	}
	return s.Draw()
}

// ago is how long before now t was, to the second.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}

// short is a message's first clause, as why --all's table cuts it.
func short(msg string) string {
	if i := strings.Index(msg, "; "); i > 0 {
		return msg[:i]
	}
	return msg
}

func itoa(i int) string { return strconv.Itoa(i) }
