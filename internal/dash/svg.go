package dash

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
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

// barWidth is a bar's width in pixels.
const barWidth = 160

// bar draws a usage bar as SVG. The figures are written beside it by the
// template and named in its label, so the colour is never the only sign
// of how full it is.
func bar(u Usage) template.HTML {
	w := int(math.Round(math.Min(u.Fraction, 1) * barWidth))
	return template.HTML(fmt.Sprintf(
		`<svg class="bar" width="%d" height="12" viewBox="0 0 %d 12" role="img" aria-label="%s of %s"><rect class="track" width="%d" height="12" rx="2"/><rect class="fill %s" width="%d" height="12" rx="2"/></svg>`,
		barWidth, barWidth, template.HTMLEscapeString(u.Used), template.HTMLEscapeString(u.Total), barWidth, level(u.Fraction), w))
}

// level names how full a fraction is: ok, high (from 80%), full (100%).
func level(f float64) string {
	switch {
	case f >= 1:
		return "full"
	case f >= 0.8:
		return "high"
	}
	return "ok"
}

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
	var replicas, metric []string
	for _, s := range row.Samples {
		replicas = append(replicas, fmt.Sprintf("%.1f,%.1f", x(s.Time), y(float64(s.Replicas), maxR)))
		if s.Known {
			metric = append(metric, fmt.Sprintf("%.1f,%.1f", x(s.Time), y(s.Metric, maxM)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="replicas %d now, range %d-%d, over the last hour">`, w, h, w, h, row.Current, row.Min, row.Max)
	fmt.Fprintf(&b, `<rect class="track" width="%.0f" height="%.0f"/>`, w, h)
	if row.Goal > 0 {
		fmt.Fprintf(&b, `<line class="goal" x1="0" x2="%.0f" y1="%.1f" y2="%.1f"/>`, w, y(row.Goal, maxM), y(row.Goal, maxM))
	}
	if len(metric) > 0 {
		fmt.Fprintf(&b, `<polyline class="metric" points="%s"/>`, strings.Join(metric, " "))
	}
	if len(replicas) > 0 {
		fmt.Fprintf(&b, `<polyline class="replicas" points="%s"/>`, strings.Join(replicas, " "))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
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
