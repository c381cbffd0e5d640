package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"time"

	"berth.io/berth/internal/chart"
)

// WriteDir writes report.json and report.html to dir: one rehearsal, or
// two side by side when b is not nil. The page stands alone (its charts
// are inline SVG, no script), so it can be attached to a review.
func WriteDir(dir string, a, b *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--report %s: %w", dir, err)
	}
	var doc any = a
	if b != nil {
		doc = map[string]*Report{"a": a, "b": b}
	}
	raw, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	page := pageData{A: a, B: b, NameA: a.Design()}
	if b != nil {
		page.Comparison = compare(a, b)
		page.NameA, page.NameB = Designs(a, b)
	}
	page.Waits = waitChart(a, b)
	page.GPUs = gpuChart(a, b)
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	if err := reportPage.Execute(f, page); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type pageData struct {
	A, B *Report
	// NameA and NameB name the designs (Designs).
	NameA, NameB string
	Comparison   []comparison
	Waits        template.HTML
	GPUs         template.HTML
}

func reports(a, b *Report) []*Report {
	if b == nil {
		return []*Report{a}
	}
	return []*Report{a, b}
}

// noValues is n values, none of them given yet.
func noValues(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// waitChart is each team and class's p95 wait.
func waitChart(a, b *Report) template.HTML {
	var bars []chart.BarGroup
	index := map[string]int{}
	rs := reports(a, b)
	for i, r := range rs {
		for _, g := range r.Groups {
			if g.NeverRan == g.Jobs {
				continue // no waits to draw
			}
			k := g.Team + "/" + g.Class
			at, ok := index[k]
			if !ok {
				at = len(bars)
				index[k] = at
				bars = append(bars, chart.BarGroup{Label: k, Values: noValues(len(rs)), Text: func(v float64) string {
					return short(Duration(time.Duration(v * float64(time.Minute))))
				}})
			}
			bars[at].Values[i] = time.Duration(g.WaitP95).Minutes()
		}
	}
	return chart.Bars("Wait, p95 (minutes of trace time)", bars)
}

// gpuChart is each GPU pool's idle GPU-hours.
func gpuChart(a, b *Report) template.HTML {
	var bars []chart.BarGroup
	index := map[string]int{}
	rs := reports(a, b)
	for i, r := range rs {
		for _, p := range r.Pools {
			if p.GPUHours == 0 {
				continue
			}
			at, ok := index[p.Name]
			if !ok {
				at = len(bars)
				index[p.Name] = at
				bars = append(bars, chart.BarGroup{Label: "pool " + p.Name, Values: noValues(len(rs)), Text: func(v float64) string { return hours(v) + " GPU-h idle" }})
			}
			bars[at].Values[i] = p.GPUHoursIdle
		}
	}
	return chart.Bars("Idle GPU-hours per pool", bars)
}

// topRequests are the kinds of request a report's page lists: the ten
// the API server spent the most time on (the JSON has every kind).
func topRequests(rs []RequestCount) []RequestCount { return rs[:min(len(rs), 10)] }

// wall is a wall-clock duration of the clock's account, to the
// millisecond.
func wall(d Duration) string { return time.Duration(d).Round(time.Millisecond).String() }

var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{"short": short, "hours": hours, "jobHours": func(d Duration) string { return hours(time.Duration(d).Hours()) }, "charts": charts,
	"deref": func(f *float64) float64 { return *f }, "replacementLine": replacementLine, "topRequests": topRequests, "wall": wall}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>berth rehearse: {{.NameA}}{{if .B}} vs {{.NameB}}{{end}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}
th{background:#f3f5f7}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px}
</style></head><body>
<h1>Rehearsal of {{.NameA}}{{if .B}} vs {{.NameB}}{{end}}</h1>
<p>Trace {{.A.Trace}}, seed {{.A.Seed}}; every figure is trace time on the rehearsal's clock, exact to {{short .A.Tolerance}}{{if .A.Partial}} (A stopped early: partial){{end}}{{if .B}}{{if .B.Partial}} (B stopped early: partial){{end}}{{end}}.</p>
{{if .B}}<p class="legend"><span style="background:#1f5f8b"></span>A {{.NameA}}<span style="background:#8fc1e3"></span>B {{.NameB}}</p>
<h2>What changed</h2>
<table><tr><th>measure</th><th>A</th><th>B</th><th>B − A</th></tr>
{{range .Comparison}}<tr><td>{{.Measure}}</td><td>{{.A}}</td><td>{{.B}}</td><td>{{.Diff}}</td></tr>
{{end}}</table>{{end}}
{{.Waits}}
{{.GPUs}}
{{template "one" .A}}{{if .B}}{{template "one" .B}}{{end}}
</body></html>
{{define "one"}}<h2>{{.Design}}: {{short .Rehearsed}} of trace in {{short .Wall}}</h2>
{{range charts .}}{{.}}
{{end}}
<table><tr><th>team</th><th>class</th><th>jobs</th><th>done</th><th>failed</th><th>never ran</th><th>wait p50</th><th>p95</th><th>max</th><th>quota-refused job-h</th><th>lost GPU-h</th></tr>
{{range .Groups}}<tr><td>{{.Team}}</td><td>{{.Class}}</td><td>{{.Jobs}}</td><td>{{.Completed}}</td><td>{{.Failed}}</td><td>{{.NeverRan}}</td>{{if eq .NeverRan .Jobs}}<td>-</td><td>-</td><td>-</td>{{else}}<td>{{short .WaitP50}}</td><td>{{short .WaitP95}}</td><td>{{short .WaitMax}}</td>{{end}}<td>{{jobHours .QuotaRefused}}</td><td>{{hours .LostGPUHours}}</td></tr>
{{end}}</table>
{{if .RecordedWaits}}<table><tr><th>recorded waits</th><th>jobs</th><th>replayed p50</th><th>p95</th><th>recorded p50</th><th>p95</th><th>never ran</th></tr>
{{range .RecordedWaits}}<tr><td>{{.Team}}</td><td>{{.Jobs}}</td>{{if .Jobs}}<td>{{short .ReplayedP50}}</td><td>{{short .ReplayedP95}}</td><td>{{short .RecordedP50}}</td><td>{{short .RecordedP95}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td>{{end}}<td>{{.NeverRan}}</td></tr>
{{end}}</table>{{end}}
<table><tr><th>pool</th><th>capacity</th><th>node-h</th><th>peak nodes</th><th>GPU-h</th><th>allocated</th><th>idle</th><th>at zero</th></tr>
{{range .Pools}}<tr><td>{{.Name}}</td><td>{{.Capacity}}</td><td>{{hours .NodeHours}}</td><td>{{.PeakNodes}}</td><td>{{hours .GPUHours}}</td><td>{{hours .GPUHoursAllocated}}</td><td>{{hours .GPUHoursIdle}}</td><td>{{short .AtZero}}</td></tr>
{{end}}</table>
{{if .Services}}<table><tr><th>service</th><th>team</th><th>peak rps</th><th>replicas mean</th><th>peak</th><th>min available</th><th>below budget</th></tr>
{{range .Services}}<tr><td>{{.Name}}</td><td>{{.Team}}</td><td>{{.PeakRPS}}</td><td>{{printf "%.1f" .MeanReplicas}}</td><td>{{.PeakReplicas}}</td><td>{{.MinAvailable}}</td><td>{{short .BelowBudget}}</td></tr>
{{end}}</table>{{end}}
{{if .Storage}}<table><tr><th>storage class</th><th>volumes</th><th>peak GiB</th><th>GiB-h</th><th>cost</th></tr>
{{range .Storage}}<tr><td>{{.Class}}</td><td>{{.Volumes}}</td><td>{{printf "%.0f" .PeakGiB}}</td><td>{{hours .GiBHours}}</td><td>{{if .Cost}}{{printf "$%.2f" (deref .Cost)}}{{else}}- (no pricePerGiBMonth){{end}}</td></tr>
{{end}}</table>{{end}}
{{if .Queues}}<table><tr><th>queue (Kueue)</th><th>suspended job-h</th><th>max</th><th>GPU-h borrowed</th><th>lent</th><th>preempted by reclaim</th><th>priority</th><th>fair sharing</th></tr>
{{range .Queues}}<tr><td>{{.Team}}</td><td>{{jobHours .Suspended}}</td><td>{{short .SuspendedMax}}</td><td>{{hours .BorrowedGPUHours}}</td><td>{{hours .LentGPUHours}}</td><td>{{.PreemptedReclaim}}</td><td>{{.PreemptedPriority}}</td><td>{{.PreemptedFairSharing}}</td></tr>
{{end}}</table>{{end}}
{{with replacementLine .}}<p>{{.}}</p>{{end}}
{{if .Disruptions}}<table><tr><th>disruption</th><th>at</th><th>pool</th><th>notice</th><th>took</th><th>nodes</th></tr>
{{range .Disruptions}}<tr><td>{{.Kind}}</td><td>{{short .At}}</td><td>{{.Pool}}</td><td>{{if .Notice}}{{short .Notice}}{{else}}-{{end}}</td><td>{{if .Took}}{{short .Took}}{{else}}-{{end}}</td><td>{{if .Error}}failed: {{.Error}}{{else}}{{range $i, $n := .Nodes}}{{if $i}}, {{end}}{{$n}}{{else}}(none up){{end}}{{end}}</td></tr>
{{end}}</table>{{end}}
<p>The clock took {{.Clock.Steps}} steps of {{short .Clock.Step}}{{if .Speed}}, at most {{.Speed}} times real time{{end}}; the cluster settled before them in {{short .Clock.Settling}} of wall time in all.</p>
{{if .Clock.Causes}}<table><tr><th>the clock stopped for</th><th>moments</th><th>alone</th><th>settling after</th></tr>
{{range .Clock.Causes}}<tr><td>{{.Component}}</td><td>{{.Moments}}</td><td>{{.Alone}}</td><td>{{wall .Settling}}</td></tr>
{{end}}</table>{{end}}
{{with topRequests .Clock.Requests}}<table><tr><th>the API server's longest work</th><th>requests</th><th>refused</th><th>served in</th></tr>
{{range .}}<tr><td>{{.Verb}} {{.Resource}}</td><td>{{.Count}}</td><td>{{.Refused}}</td><td>{{wall .Served}}</td></tr>
{{end}}</table>{{end}}
{{range .Notes}}<p>note: {{.}}</p>{{end}}
{{end}}`))
