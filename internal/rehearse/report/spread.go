package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// Unit is what a Figure's value counts.
type Unit string

const (
	// Seconds is a duration: a wait, time below a budget.
	Seconds Unit = "seconds"
	// Hours are node-, GPU-, job- or GiB-hours.
	Hours Unit = "hours"
	// Count is a number of jobs or preemptions.
	Count Unit = "count"
	// Dollars is money.
	Dollars Unit = "dollars"
)

// Figure is one measure of a rehearsal a platform team decides on, as a
// number: the measures `--vs` compares, by the same names.
type Figure struct {
	Name  string  `json:"name"`
	Unit  Unit    `json:"unit"`
	Value float64 `json:"value"`
	// Better says which way is better: -1 lower (a wait, a cost), +1
	// higher (spot savings), 0 neither (GPU-hours lent).
	Better int `json:"better"`
}

// Figures are r's measures, in the order the comparison lists them. A
// group none of whose jobs ran has no waits.
func Figures(r *Report) []Figure {
	var out []Figure
	add := func(name string, unit Unit, v float64, better int) {
		out = append(out, Figure{Name: name, Unit: unit, Value: v, Better: better})
	}
	for _, g := range r.Groups {
		k := g.Team + "/" + g.Class
		if g.NeverRan < g.Jobs {
			add(k+" wait p50", Seconds, time.Duration(g.WaitP50).Seconds(), -1)
			add(k+" wait p95", Seconds, time.Duration(g.WaitP95).Seconds(), -1)
			add(k+" wait max", Seconds, time.Duration(g.WaitMax).Seconds(), -1)
		}
		add(k+" quota-refused job-hours", Hours, time.Duration(g.QuotaRefused).Hours(), -1)
		add(k+" jobs never ran", Count, float64(g.NeverRan), -1)
	}
	var idle float64
	for _, p := range r.Pools {
		add("pool "+p.Name+" node-hours", Hours, p.NodeHours, -1)
		if p.GPUHours > 0 {
			add("pool "+p.Name+" idle GPU-hours", Hours, p.GPUHoursIdle, -1)
		}
		idle += p.GPUHoursIdle
	}
	add("idle GPU-hours, all pools", Hours, idle, -1)
	for _, s := range r.Services {
		add("service "+s.Team+"/"+s.Name+" below budget", Seconds, time.Duration(s.BelowBudget).Seconds(), -1)
	}
	for _, q := range r.Queues {
		add(q.Team+" job-hours suspended in its queue", Hours, time.Duration(q.Suspended).Hours(), -1)
		add(q.Team+" GPU-hours borrowed", Hours, q.BorrowedGPUHours, 0)
		add(q.Team+" GPU-hours lent", Hours, q.LentGPUHours, 0)
		add(q.Team+" preemptions by reclaim", Count, float64(q.PreemptedReclaim), -1)
	}
	if priced(r) {
		add("cost, total", Dollars, float64(r.Cost.Total)/100, -1)
		add("spot saved", Dollars, float64(r.Cost.SpotSavings)/100, +1)
	}
	return out
}

// priced reports whether r's cost prices any pool: a rehearsal with no
// price for any of its pools (no --cloud) costs $0.00, which is not a
// figure to compare.
func priced(r *Report) bool {
	if r.Cost == nil {
		return false
	}
	for _, p := range r.Cost.Pools {
		if p.Cost != nil {
			return true
		}
	}
	return false
}

// Spread is one figure across replications: its median, range, and the
// 95% interval of its mean (Student's t over the replications), which
// stops at zero: every figure is a wait, an amount of hours, a count or
// money, none below zero.
type Spread struct {
	Name   string  `json:"name"`
	Unit   Unit    `json:"unit"`
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	// Values are the replications' values, in their order.
	Values []float64 `json:"values"`
}

// Spreads are each figure's spread over reps, in the order of the first
// report's figures, then any that only later ones have. A figure some
// replications lack (a group that ran in none of its jobs in one) is over
// those that have it.
func Spreads(reps []*Report) []Spread {
	values, order, units := collect(reps)
	out := make([]Spread, 0, len(order))
	for _, name := range order {
		out = append(out, spreadOf(name, units[name], values[name]))
	}
	return out
}

func collect(reps []*Report) (map[string][]float64, []string, map[string]Unit) {
	values := map[string][]float64{}
	units := map[string]Unit{}
	var order []string
	for _, r := range reps {
		for _, f := range Figures(r) {
			if _, ok := values[f.Name]; !ok {
				order = append(order, f.Name)
				units[f.Name] = f.Unit
			}
			values[f.Name] = append(values[f.Name], f.Value)
		}
	}
	return values, order, units
}

func spreadOf(name string, unit Unit, v []float64) Spread {
	s := Spread{Name: name, Unit: unit, N: len(v), Values: v}
	if len(v) == 0 {
		return s
	}
	s.Median = median(v)
	s.Min, s.Max = slices.Min(v), slices.Max(v)
	s.Low, s.High = interval(v)
	s.Low = max(s.Low, 0)
	return s
}

// median is the middle value of v, or the mean of the middle two.
func median(v []float64) float64 {
	sorted := slices.Sorted(slices.Values(v))
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// interval is the 95% confidence interval of v's mean: mean ± t·s/√n,
// with Student's t for n−1 degrees of freedom. One value has no spread
// to estimate: its interval is the value.
func interval(v []float64) (low, high float64) {
	n := len(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(n)
	if n < 2 {
		return mean, mean
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	half := studentT95(n-1) * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	return mean - half, mean + half
}

// studentT95 is the two-sided 95% quantile of Student's t with df
// degrees of freedom (the normal's 1.96 past 30).
func studentT95(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df >= 1 && df <= len(table) {
		return table[df-1]
	}
	return 1.96
}

// Verdict is what the replications say of B against A on one figure.
type Verdict string

const (
	BBetter      Verdict = "B better"
	BWorse       Verdict = "B worse"
	BHigher      Verdict = "B higher"
	BLower       Verdict = "B lower"
	NoDifference Verdict = "no difference the replications can show"
)

// Paired is one figure of two designs replayed on the same seeds: each
// side's median, and the median of the paired differences (B − A, seed
// by seed) with the 95% interval of their mean and the verdict it gives.
type Paired struct {
	Name    string    `json:"name"`
	Unit    Unit      `json:"unit"`
	N       int       `json:"n"`
	A       float64   `json:"a"`
	B       float64   `json:"b"`
	Diff    float64   `json:"diff"`
	Low     float64   `json:"low"`
	High    float64   `json:"high"`
	Verdict Verdict   `json:"verdict"`
	Diffs   []float64 `json:"diffs"`
}

// Compare pairs a[i] with b[i], replications of two designs on the same
// seed, and gives each figure both have in at least one pair its paired
// comparison. Pairs on different seeds are an error: their differences
// would mix the designs' effect with the seeds'.
func Compare(a, b []*Report) ([]Paired, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("%d replications of A and %d of B: a paired comparison needs one of each per seed", len(a), len(b))
	}
	type pair struct{ a, b []float64 }
	pairs := map[string]*pair{}
	units := map[string]Unit{}
	better := map[string]int{}
	var order []string
	for i := range a {
		if a[i].Seed != b[i].Seed {
			return nil, fmt.Errorf("replication %d: A ran on seed %d and B on seed %d; a paired comparison needs the same seed on both sides", i+1, a[i].Seed, b[i].Seed)
		}
		fb := map[string]float64{}
		for _, f := range Figures(b[i]) {
			fb[f.Name] = f.Value
		}
		for _, f := range Figures(a[i]) {
			y, ok := fb[f.Name]
			if !ok {
				continue
			}
			p := pairs[f.Name]
			if p == nil {
				p = &pair{}
				pairs[f.Name] = p
				units[f.Name], better[f.Name] = f.Unit, f.Better
				order = append(order, f.Name)
			}
			p.a, p.b = append(p.a, f.Value), append(p.b, y)
		}
	}
	out := make([]Paired, 0, len(order))
	for _, name := range order {
		p := pairs[name]
		diffs := make([]float64, len(p.a))
		for i := range p.a {
			diffs[i] = p.b[i] - p.a[i]
		}
		c := Paired{Name: name, Unit: units[name], N: len(diffs), A: median(p.a), B: median(p.b), Diff: median(diffs), Diffs: diffs}
		c.Low, c.High = interval(diffs)
		c.Verdict = verdict(c.Low, c.High, len(diffs), better[name])
		out = append(out, c)
	}
	return out, nil
}

// verdict reads the interval of the mean difference B − A: one that
// excludes zero shows a difference, in the figure's better direction.
// A single pair shows none (nothing to say how much a seed moves it),
// nor does an interval that reaches zero.
func verdict(low, high float64, n, better int) Verdict {
	if n < 2 || (low <= 0 && high >= 0) {
		return NoDifference
	}
	higher := low > 0
	switch {
	case better == 0 && higher:
		return BHigher
	case better == 0:
		return BLower
	case (better > 0) == higher:
		return BBetter
	default:
		return BWorse
	}
}

// WriteSpreads writes replications' figures as a table: each figure's
// median, range and 95% interval.
func WriteSpreads(w io.Writer, reps []*Report) error {
	if len(reps) == 0 {
		return nil
	}
	seeds := make([]int64, len(reps))
	for i, r := range reps {
		seeds[i] = r.Seed
	}
	fmt.Fprintf(w, "Trace %s on %s: %d replications, seeds %s\n\n", reps[0].Trace, reps[0].Blueprint, len(reps), seedList(seeds))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tMEDIAN\tRANGE\t95% INTERVAL OF THE MEAN")
	for _, s := range Spreads(reps) {
		fmt.Fprintf(tw, "%s\t%s\t%s – %s\t%s – %s\n", s.Name, value(s.Unit, s.Median),
			value(s.Unit, s.Min), value(s.Unit, s.Max), value(s.Unit, s.Low), value(s.Unit, s.High))
	}
	return tw.Flush()
}

// WritePaired writes two designs' replications compared seed by seed:
// each side's median, the median difference with its interval, and the
// verdict.
func WritePaired(w io.Writer, a, b []*Report) error {
	rows, err := Compare(a, b)
	if err != nil {
		return err
	}
	if len(a) == 0 {
		return nil
	}
	seeds := make([]int64, len(a))
	for i, r := range a {
		seeds[i] = r.Seed
	}
	da, db := Designs(a[0], b[0])
	fmt.Fprintf(w, "Trace %s, %d replications on seeds %s: A is %s, B is %s\n\n", a[0].Trace, len(a), seedList(seeds), da, db)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tA (MEDIAN)\tB (MEDIAN)\tB - A (MEDIAN)\t95% INTERVAL\tVERDICT")
	for _, c := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s – %s\t%s\n", c.Name, value(c.Unit, c.A), value(c.Unit, c.B),
			signedValue(c.Unit, c.Diff), signedValue(c.Unit, c.Low), signedValue(c.Unit, c.High), c.Verdict)
	}
	return tw.Flush()
}

// value writes v in its unit, as the single report's table does.
func value(u Unit, v float64) string {
	switch u {
	case Seconds:
		if v < 0 {
			return "-" + short(Duration(time.Duration(-v*float64(time.Second)).Round(time.Second)))
		}
		return short(Duration(time.Duration(v * float64(time.Second)).Round(time.Second)))
	case Dollars:
		if v < 0 {
			return fmt.Sprintf("-$%.2f", -v)
		}
		return fmt.Sprintf("$%.2f", v)
	case Count:
		if v == math.Trunc(v) {
			return fmt.Sprintf("%.0f", v)
		}
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

// signedValue writes v with its sign: "+15m", "-$0.83", "0s".
func signedValue(u Unit, v float64) string {
	if v <= 0 || value(u, v) == value(u, 0) {
		return value(u, v)
	}
	return "+" + value(u, v)
}

// seedList writes seeds as a range when they are consecutive: "1–4".
func seedList(seeds []int64) string {
	s := slices.Clone(seeds)
	slices.SortFunc(s, cmp.Compare)
	consecutive := true
	for i := 1; i < len(s); i++ {
		if s[i] != s[i-1]+1 {
			consecutive = false
		}
	}
	if consecutive && len(s) > 1 {
		return fmt.Sprintf("%d–%d", s[0], s[len(s)-1])
	}
	return fmt.Sprint(s)
}
