// Package chart draws the SVG charts of berth dash and of a rehearsal's
// report.html: each chart's geometry is worked out in Go, and its markup
// written by html/template, which escapes every label, name and number it
// writes into the SVG. It imports nothing of berth's.
package chart

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

var charts = template.Must(template.New("chart").Parse(`
{{define "bars"}}<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" role="img" aria-label="{{.Title}}"><text x="0" y="16" font-weight="bold">{{.Title}}</text>
{{- range .Rows}}<text x="0" y="{{.TextY}}" font-size="13">{{.Label}}</text>
{{- if .None}}<text x="{{.ValueX}}" y="{{.TextY}}" font-size="12">-</text>
{{- else}}<rect x="{{.X}}" y="{{.Y}}" width="{{.Width}}" height="{{.Height}}" fill="{{.Fill}}"/><text x="{{.ValueX}}" y="{{.TextY}}" font-size="12">{{.Text}}</text>{{end}}
{{- end}}</svg>{{end}}

{{define "lines"}}<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" role="img" aria-label="{{.Title}}" font-family="sans-serif"><text x="0" y="16" font-weight="bold" font-size="14">{{.Title}}</text>
{{- with .Axes}}<line x1="{{.Left}}" y1="{{.Bottom}}" x2="{{.Right}}" y2="{{.Bottom}}" stroke="#999"/><line x1="{{.Left}}" y1="{{.Top}}" x2="{{.Left}}" y2="{{.Bottom}}" stroke="#999"/>{{end}}
{{- range .Ticks}}<text x="{{.LabelX}}" y="{{.LabelY}}" font-size="11" text-anchor="end">{{.Value}}</text><line x1="{{.GridX1}}" y1="{{.GridY}}" x2="{{.GridX2}}" y2="{{.GridY}}" stroke="#eee"/><text x="{{.TimeX}}" y="{{.TimeY}}" font-size="11" text-anchor="middle">{{.Time}}</text>
{{- end}}<text x="{{.UnitX}}" y="{{.UnitY}}" font-size="11">{{.Unit}}</text>
{{- range .Lines}}<path d="{{.D}}" fill="none" stroke="{{.Color}}" stroke-width="2"{{if .Dashed}} stroke-dasharray="5,4"{{end}}/><rect x="{{.KeyX}}" y="{{.KeyY}}" width="10" height="10" fill="{{.Color}}"/><text x="{{.NameX}}" y="{{.NameY}}" font-size="12">{{.Name}}</text>
{{- end}}</svg>{{end}}

{{define "spread"}}<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" role="img" aria-label="{{.Title}}" font-family="sans-serif"><text x="0" y="16" font-weight="bold" font-size="14">{{.Title}}</text>
{{- range .Rows}}<text x="0" y="{{.TextY}}" font-size="13">{{.Label}}</text><line x1="{{.Left}}" y1="{{.Y}}" x2="{{.Right}}" y2="{{.Y}}" stroke="#eee"/>
{{- range .Series}}<line class="interval" x1="{{.LowX}}" y1="{{.Y}}" x2="{{.HighX}}" y2="{{.Y}}" stroke="{{.Color}}" stroke-width="8" stroke-opacity="0.3" stroke-linecap="round"/>
{{- $s := .}}{{range .Dots}}<circle class="replication" cx="{{.}}" cy="{{$s.Y}}" r="4" fill="{{$s.Color}}"/>{{end}}
{{- end}}{{end}}
{{- range .Keys}}<rect x="{{.X}}" y="{{.Y}}" width="10" height="10" fill="{{.Color}}"/><text x="{{.TextX}}" y="{{.TextY}}" font-size="12">{{.Name}}</text>{{end}}
<text x="{{.Left}}" y="{{.AxisY}}" font-size="11">0</text><text x="{{.Right}}" y="{{.AxisY}}" font-size="11" text-anchor="end">{{.Peak}}</text></svg>{{end}}

{{define "usage"}}<svg class="bar" width="{{.W}}" height="12" viewBox="0 0 {{.W}} 12" role="img" aria-label="{{.Used}} of {{.Total}}"><rect class="track" width="{{.W}}" height="12" rx="2"/><rect class="fill {{.Level}}" width="{{.Fill}}" height="12" rx="2"/></svg>{{end}}

{{define "spark"}}<svg class="spark" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Label}}"><rect class="track" width="{{.W}}" height="{{.H}}"/>
{{- if .HasGoal}}<line class="goal" x1="0" x2="{{.W}}" y1="{{.GoalY}}" y2="{{.GoalY}}"/>{{end}}
{{- if .Metric}}<polyline class="metric" points="{{.Metric}}"/>{{end}}
{{- if .Replicas}}<polyline class="replicas" points="{{.Replicas}}"/>{{end}}</svg>{{end}}
`))

func render(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := charts.ExecuteTemplate(&b, name, data); err != nil {
		// The templates are fixed and their data plain values: an error
		// is a bug in this package.
		panic(fmt.Sprintf("chart %s: %v", name, err))
	}
	return template.HTML(b.String())
}

// BarGroup is one label's bars, one per value; a NaN value is one that
// is missing, drawn as "-" without a bar.
type BarGroup struct {
	Label  string
	Values []float64
	// Text writes a value beside its bar.
	Text func(float64) string
}

// barColors tell the values of a group apart: the first dark, the
// second light.
var barColors = []string{"#1f5f8b", "#8fc1e3"}

// Bars draws horizontal bars, one row per value, its group's label on
// the first, scaled to the largest value.
func Bars(title string, groups []BarGroup) template.HTML {
	const rowH, labelW, barW = 22, 220, 420
	peak := 0.0
	for _, g := range groups {
		for _, v := range g.Values {
			if !math.IsNaN(v) {
				peak = max(peak, v)
			}
		}
	}
	if peak == 0 {
		peak = 1
	}
	type row struct {
		Label, Text, Fill   string
		None                bool
		X, Y, Width, Height int
		TextY, ValueX       int
	}
	var rows []row
	y := 30
	for _, g := range groups {
		for i, v := range g.Values {
			r := row{TextY: y + 15, ValueX: labelW + 6}
			if i == 0 {
				r.Label = g.Label
			}
			if math.IsNaN(v) {
				r.None = true
			} else {
				w := max(int(float64(barW)*v/peak), 1)
				r.X, r.Y, r.Width, r.Height, r.Fill = labelW, y+2, w, rowH-4, barColors[i%len(barColors)]
				r.ValueX, r.Text = labelW+w+6, g.Text(v)
			}
			rows = append(rows, r)
			y += rowH
		}
		y += 6
	}
	return render("bars", struct {
		Title string
		W, H  int
		Rows  []row
	}{title, labelW + barW + 120, len(rows)*rowH + len(groups)*6 + 30, rows})
}

// SpreadRow is one figure of replications: per design, each
// replication's value and the interval of their mean.
type SpreadRow struct {
	Label  string
	Series []SpreadSeries
}

// SpreadSeries is one design's replications of a figure.
type SpreadSeries struct {
	Values    []float64
	Low, High float64
}

// Spread draws each row's replications as dots on a line from zero to
// the largest value of the chart, over a band from the interval's low to
// its high: one line of dots per design, coloured as names says (the
// designs' names, for the key; one name, no key). peak writes the axis's
// end.
func Spread(title string, names []string, peakText func(float64) string, rows []SpreadRow) template.HTML {
	const labelW, plotW, rowH, seriesH = 260, 380, 30, 14
	peak := 0.0
	for _, r := range rows {
		for _, s := range r.Series {
			for _, v := range s.Values {
				peak = max(peak, v)
			}
			peak = max(peak, s.High)
		}
	}
	if peak <= 0 {
		peak = 1
	}
	x := func(v float64) int { return labelW + int(float64(plotW)*max(v, 0)/peak) }
	type series struct {
		Y, LowX, HighX int
		Dots           []int
		Color          string
	}
	type row struct {
		Label       string
		TextY, Y    int
		Left, Right int
		Series      []series
	}
	type key struct {
		X, Y, TextX, TextY int
		Color, Name        string
	}
	var out []row
	y := 34
	for _, r := range rows {
		h := max(rowH, len(r.Series)*seriesH+8)
		o := row{Label: r.Label, TextY: y + h/2 + 4, Y: y + h/2, Left: labelW, Right: labelW + plotW}
		for i, s := range r.Series {
			sy := y + h/2 + (i*2-len(r.Series)+1)*seriesH/2
			ser := series{Y: sy, LowX: x(s.Low), HighX: x(s.High), Color: palette[i%len(palette)]}
			for _, v := range s.Values {
				ser.Dots = append(ser.Dots, x(v))
			}
			o.Series = append(o.Series, ser)
		}
		out = append(out, o)
		y += h
	}
	var keys []key
	if len(names) > 1 {
		for i, n := range names {
			keys = append(keys, key{X: labelW + plotW + 20, Y: 34 + i*18, TextX: labelW + plotW + 34, TextY: 43 + i*18, Color: palette[i%len(palette)], Name: n})
		}
	}
	return render("spread", struct {
		Title              string
		W, H               int
		Rows               []row
		Keys               []key
		Left, Right, AxisY int
		Peak               string
	}{title, labelW + plotW + 160, y + 24, out, keys, labelW, labelW + plotW, y + 14, peakText(peak)})
}

// Point is a value Y from X on, in a step line.
type Point struct{ X, Y float64 }

// Line is one series of a Lines chart: step points, or a constant (a
// quota) when Flat is set.
type Line struct {
	Name   string
	Points []Point
	Flat   *float64
	Dashed bool
}

// palette colours the lines of a chart in order.
var palette = []string{"#1f5f8b", "#d1495b", "#edae49", "#00798c", "#66a182", "#8d96a3", "#30343f", "#9b5de5"}

// Lines draws step lines from X = 0 to the largest X, the y axis from 0
// to the largest value rounded up to 1, 2 or 5 times a power of ten,
// four ticks on each axis; xLabel writes an X tick, unit names the y
// axis. A chart with no point draws nothing.
func Lines(title, unit string, xLabel func(float64) string, lines []Line) template.HTML {
	const w, h, left, bottom, top, right = 640, 236, 56, 28, 42, 130
	end, peak := 0.0, 0.0
	for _, l := range lines {
		for _, p := range l.Points {
			end = max(end, p.X)
			peak = max(peak, p.Y)
		}
		if l.Flat != nil {
			peak = max(peak, *l.Flat)
		}
	}
	if end == 0 || len(lines) == 0 {
		return ""
	}
	if peak == 0 {
		peak = 1
	}
	peak = niceCeil(peak)
	x := func(v float64) float64 { return left + float64(w-left-right)*v/end }
	y := func(v float64) float64 { return top + float64(h-top-bottom)*(1-v/peak) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

	type tick struct {
		Value, Time                   string
		LabelX, GridX1, GridX2, TimeY int
		LabelY, GridY, TimeX          string
	}
	var ticks []tick
	for i := 0; i <= 4; i++ {
		v := peak * float64(i) / 4
		t := end * float64(i) / 4
		ticks = append(ticks, tick{
			Value: TrimFloat(v), LabelX: left - 4, LabelY: f(y(v) + 4),
			GridX1: left, GridX2: w - right, GridY: f(y(v)),
			Time: xLabel(t), TimeX: f(x(t)), TimeY: h - bottom + 14,
		})
	}
	type series struct {
		Name, Color, D           string
		Dashed                   bool
		KeyX, KeyY, NameX, NameY int
	}
	var out []series
	for i, l := range lines {
		var d strings.Builder
		if l.Flat != nil {
			fmt.Fprintf(&d, "M%.1f,%.1f H%.1f", x(0), y(*l.Flat), x(end))
		} else {
			for j, p := range l.Points {
				if j == 0 {
					fmt.Fprintf(&d, "M%.1f,%.1f", x(p.X), y(p.Y))
					continue
				}
				fmt.Fprintf(&d, " H%.1f V%.1f", x(p.X), y(p.Y))
			}
		}
		out = append(out, series{
			Name: l.Name, Color: palette[i%len(palette)], D: d.String(), Dashed: l.Dashed,
			KeyX: w - right + 10, KeyY: top + i*16, NameX: w - right + 24, NameY: top + i*16 + 9,
		})
	}
	return render("lines", struct {
		Title, Unit  string
		W, H         int
		UnitX, UnitY int
		Axes         struct{ Left, Right, Top, Bottom int }
		Ticks        []tick
		Lines        []series
	}{
		Title: title, Unit: unit, W: w, H: h, UnitX: left, UnitY: top - 6,
		Axes:  struct{ Left, Right, Top, Bottom int }{left, w - right, top, h - bottom},
		Ticks: ticks, Lines: out,
	})
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

// TrimFloat writes v to two decimals at most, without trailing zeros.
func TrimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

// UsageWidth is a Usage bar's width in pixels.
const UsageWidth = 160

// Usage draws how full something is (used of total, a fraction) as a
// bar: its class is the level ("ok", "high" from 80%, "full"), and its
// label says the figures, so the colour is never the only sign.
func Usage(used, total string, fraction float64) template.HTML {
	return render("usage", struct {
		Used, Total, Level string
		W, Fill            int
	}{used, total, Level(fraction), UsageWidth, int(math.Round(math.Min(fraction, 1) * UsageWidth))})
}

// Level names how full a fraction is: ok, high (from 80%), full (100%).
func Level(f float64) string {
	switch {
	case f >= 1:
		return "full"
	case f >= 0.8:
		return "high"
	}
	return "ok"
}

// Spark is a small chart of two lines over a window (an HPA's replicas,
// solid, and its metric, dashed), each already scaled to the chart's
// pixels, and the metric's goal as a dotted line where there is one.
type Spark struct {
	W, H             float64
	Label            string
	Replicas, Metric []Point
	Goal             *float64
}

// Draw draws the spark.
func (s Spark) Draw() template.HTML {
	points := func(ps []Point) string {
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%.1f,%.1f", p.X, p.Y))
		}
		return strings.Join(out, " ")
	}
	goal := 0.0
	if s.Goal != nil {
		goal = *s.Goal
	}
	return render("spark", struct {
		W, H, Label, GoalY, Metric, Replicas string
		HasGoal                              bool
	}{
		W: fmt.Sprintf("%.0f", s.W), H: fmt.Sprintf("%.0f", s.H), Label: s.Label,
		GoalY: fmt.Sprintf("%.1f", goal), HasGoal: s.Goal != nil,
		Metric: points(s.Metric), Replicas: points(s.Replicas),
	})
}
