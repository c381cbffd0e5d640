package report

import (
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"time"

	"berth.io/berth/internal/chart"
)

// FiguresPage is the page `--repeat N --report DIR` writes beside
// figures.json: the replications' spread drawn and tabled, or two
// designs' paired comparison with its verdicts marked.
const FiguresPage = "figures.html"

// WriteFiguresPage writes dir/figures.html for the replications of one
// design (reps of length 1) or of two on the same seeds (length 2).
func WriteFiguresPage(dir string, reps [][]*Report) error {
	if len(reps) == 0 || len(reps[0]) == 0 {
		return nil
	}
	first := reps[0][0]
	seeds := make([]int64, len(reps[0]))
	for i, r := range reps[0] {
		seeds[i] = r.Seed
	}
	page := figuresData{Trace: first.Trace, N: len(reps[0]), Seeds: seedList(seeds)}
	var spreads [][]Spread
	for _, set := range reps {
		spreads = append(spreads, Spreads(set))
	}
	if len(reps) == 1 {
		page.Names = []string{first.Design()}
		page.Spreads = spreads[0]
	} else {
		a, b := Designs(reps[0][0], reps[1][0])
		page.Names = []string{a, b}
		paired, err := Compare(reps[0], reps[1])
		if err != nil {
			return err
		}
		page.Paired = paired
	}
	page.Waits = spreadChart("Wait, p95, each replication (minutes of trace time)", page.Names, spreads, func(name string) bool { return strings.HasSuffix(name, " wait p95") }, minutes)
	page.Idle = spreadChart("Idle GPU-hours, each replication", page.Names, spreads, func(name string) bool {
		return strings.HasSuffix(name, "idle GPU-hours") || name == "idle GPU-hours, all pools"
	}, hours)
	page.Cost = spreadChart("Cost, each replication", page.Names, spreads, func(name string) bool { return name == "cost, total" }, func(v float64) string { return value(Dollars, v) })
	f, err := os.Create(filepath.Join(dir, FiguresPage))
	if err != nil {
		return err
	}
	if err := figuresPage.Execute(f, page); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type figuresData struct {
	Trace   string
	N       int
	Seeds   string
	Names   []string
	Spreads []Spread
	Paired  []Paired
	// The charts: each replication a dot, the interval of the mean a
	// band, one line per design.
	Waits, Idle, Cost template.HTML
}

// minutes writes seconds as a report's duration, for a chart in minutes.
func minutes(v float64) string { return short(Duration(time.Duration(v * float64(time.Minute)))) }

// spreadChart draws the figures keep picks out of each design's spreads,
// in the first design's order; a figure a design lacks has no dots there.
// Waits (seconds) are drawn in minutes. No figure, no chart.
func spreadChart(title string, names []string, spreads [][]Spread, keep func(string) bool, peak func(float64) string) template.HTML {
	var rows []chart.SpreadRow
	index := map[string]int{}
	for d, set := range spreads {
		for _, s := range set {
			if !keep(s.Name) {
				continue
			}
			at, ok := index[s.Name]
			if !ok {
				at = len(rows)
				index[s.Name] = at
				rows = append(rows, chart.SpreadRow{Label: s.Name, Series: make([]chart.SpreadSeries, len(spreads))})
			}
			scale := 1.0
			if s.Unit == Seconds {
				scale = 1.0 / 60
			}
			series := chart.SpreadSeries{Low: s.Low * scale, High: s.High * scale}
			for _, v := range s.Values {
				series.Values = append(series.Values, v*scale)
			}
			rows[at].Series[d] = series
		}
	}
	if len(rows) == 0 {
		return ""
	}
	return chart.Spread(title, names, peak, rows)
}

// verdictClass is the class a verdict's cell takes: its colour.
func verdictClass(v Verdict) string {
	switch v {
	case BBetter:
		return "better"
	case BWorse:
		return "worse"
	case NoDifference:
		return "none"
	default:
		return "other"
	}
}

var figuresPage = template.Must(template.New("figures").Funcs(template.FuncMap{
	"value": value, "signed": signedValue, "verdictClass": verdictClass,
	"span": func(u Unit, lo, hi float64) string { return fmt.Sprintf("%s – %s", value(u, lo), value(u, hi)) },
	"signedRange": func(u Unit, lo, hi float64) string {
		return fmt.Sprintf("%s – %s", signedValue(u, lo), signedValue(u, hi))
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>berth rehearse: {{index .Names 0}}{{if .Paired}} vs {{index .Names 1}}{{end}}, {{.N}} replications</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}
th{background:#f3f5f7}
td.better{background:#dff0d8;font-weight:bold}
td.worse{background:#f6d5d5;font-weight:bold}
td.none{color:#777}
td.other{background:#eef}
.chart{margin:1.5em 0}
</style></head><body>
<h1>{{if .Paired}}A: {{index .Names 0}}, B: {{index .Names 1}}{{else}}{{index .Names 0}}{{end}}</h1>
<p>Trace <code>{{.Trace}}</code>, {{.N}} replications on seeds {{.Seeds}}{{if .Paired}}, both designs on each seed{{end}}. Each dot is one replication; the band is the 95% interval of the mean.</p>
{{if .Waits}}<div class="chart">{{.Waits}}</div>{{end}}
{{if .Idle}}<div class="chart">{{.Idle}}</div>{{end}}
{{if .Cost}}<div class="chart">{{.Cost}}</div>{{end}}
{{if .Paired}}<h2>B against A, seed by seed</h2>
<table><tr><th>measure</th><th>A (median)</th><th>B (median)</th><th>B − A (median)</th><th>95% interval</th><th>verdict</th></tr>
{{range .Paired}}<tr><td>{{.Name}}</td><td>{{value .Unit .A}}</td><td>{{value .Unit .B}}</td><td>{{signed .Unit .Diff}}</td><td>{{signedRange .Unit .Low .High}}</td><td class="{{verdictClass .Verdict}}">{{.Verdict}}</td></tr>
{{end}}</table>
{{else}}<h2>Each figure over the replications</h2>
<table><tr><th>measure</th><th>median</th><th>range</th><th>95% interval of the mean</th></tr>
{{range .Spreads}}<tr><td>{{.Name}}</td><td>{{value .Unit .Median}}</td><td>{{span .Unit .Min .Max}}</td><td>{{span .Unit .Low .High}}</td></tr>
{{end}}</table>{{end}}
<p>Each seed's own report is in <code>seed-N/report.html</code>.</p>
</body></html>
`))
