package rehearse

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// comparison is one measure of two rehearsals side by side.
type comparison struct {
	Measure string
	A, B    string
	Diff    string
}

// compare lists the measures a platform team decides on, for two
// rehearsals of the same trace: each team and class's waits, each pool's
// node-hours and idle GPU-hours, each service's time below its budget,
// and cost. A measure one rehearsal lacks (a pool only one design has)
// shows "-".
func compare(a, b *Report) []comparison {
	var rows []comparison
	dur := func(measure string, x, y *Duration) {
		c := comparison{Measure: measure, A: "-", B: "-"}
		if x != nil {
			c.A = short(*x)
		}
		if y != nil {
			c.B = short(*y)
		}
		if x != nil && y != nil {
			c.Diff = signed(time.Duration(*y - *x))
		}
		rows = append(rows, c)
	}
	num := func(measure string, x, y *float64, format string) {
		c := comparison{Measure: measure, A: "-", B: "-"}
		if x != nil {
			c.A = fmt.Sprintf(format, *x)
		}
		if y != nil {
			c.B = fmt.Sprintf(format, *y)
		}
		if x != nil && y != nil {
			c.Diff = fmt.Sprintf("%+"+format[1:], *y-*x)
		}
		rows = append(rows, c)
	}

	groups := map[string][2]*GroupResult{}
	var order []string
	for i, r := range []*Report{a, b} {
		for j := range r.Groups {
			g := &r.Groups[j]
			k := g.Team + "/" + g.Class
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			pair := groups[k]
			pair[i] = g
			groups[k] = pair
		}
	}
	for _, k := range order {
		pair := groups[k]
		get := func(f func(*GroupResult) Duration) (x, y *Duration) {
			if pair[0] != nil {
				v := f(pair[0])
				x = &v
			}
			if pair[1] != nil {
				v := f(pair[1])
				y = &v
			}
			return
		}
		x, y := get(func(g *GroupResult) Duration { return g.WaitP50 })
		dur(k+" wait p50", x, y)
		x, y = get(func(g *GroupResult) Duration { return g.WaitP95 })
		dur(k+" wait p95", x, y)
		x, y = get(func(g *GroupResult) Duration { return g.WaitMax })
		dur(k+" wait max", x, y)
		x, y = get(func(g *GroupResult) Duration { return g.QuotaRefused })
		dur(k+" quota-refused", x, y)
		cnt := func(f func(*GroupResult) int) (x, y *float64) {
			if pair[0] != nil {
				v := float64(f(pair[0]))
				x = &v
			}
			if pair[1] != nil {
				v := float64(f(pair[1]))
				y = &v
			}
			return
		}
		cx, cy := cnt(func(g *GroupResult) int { return g.NeverRan })
		num(k+" jobs never ran", cx, cy, "%.0f")
	}

	pools := map[string][2]*PoolResult{}
	order = order[:0]
	for i, r := range []*Report{a, b} {
		for j := range r.Pools {
			p := &r.Pools[j]
			if _, ok := pools[p.Name]; !ok {
				order = append(order, p.Name)
			}
			pair := pools[p.Name]
			pair[i] = p
			pools[p.Name] = pair
		}
	}
	var idleA, idleB float64
	for _, name := range order {
		pair := pools[name]
		get := func(f func(*PoolResult) float64) (x, y *float64) {
			if pair[0] != nil {
				v := f(pair[0])
				x = &v
			}
			if pair[1] != nil {
				v := f(pair[1])
				y = &v
			}
			return
		}
		x, y := get(func(p *PoolResult) float64 { return p.NodeHours })
		num("pool "+name+" node-hours", x, y, "%.1f")
		x, y = get(func(p *PoolResult) float64 { return p.GPUHoursIdle })
		num("pool "+name+" idle GPU-hours", x, y, "%.1f")
		if pair[0] != nil {
			idleA += pair[0].GPUHoursIdle
		}
		if pair[1] != nil {
			idleB += pair[1].GPUHoursIdle
		}
	}
	num("idle GPU-hours, all pools", &idleA, &idleB, "%.1f")

	services := map[string][2]*ServiceResult{}
	order = order[:0]
	for i, r := range []*Report{a, b} {
		for j := range r.Services {
			s := &r.Services[j]
			k := s.Team + "/" + s.Name
			if _, ok := services[k]; !ok {
				order = append(order, k)
			}
			pair := services[k]
			pair[i] = s
			services[k] = pair
		}
	}
	for _, k := range order {
		pair := services[k]
		var x, y *Duration
		if pair[0] != nil {
			x = &pair[0].BelowBudget
		}
		if pair[1] != nil {
			y = &pair[1].BelowBudget
		}
		dur("service "+k+" below budget", x, y)
	}
	rows = append(rows, compareCost(a, b)...)
	return rows
}

// WriteComparison writes two rehearsals of the same trace side by side,
// with what changed from the first to the second.
func WriteComparison(w io.Writer, a, b *Report) error {
	fmt.Fprintf(w, "Trace %s, speed %g, seed %d: A is %s, B is %s\n\n", a.Trace, a.Speed, a.Seed, a.Blueprint, b.Blueprint)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tA\tB\tB - A")
	for _, c := range compare(a, b) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Measure, c.A, c.B, c.Diff)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range []struct {
		name string
		rep  *Report
	}{{"A", a}, {"B", b}} {
		fmt.Fprintf(w, "\n%s %s\n", r.name, strings.Repeat("-", 60))
		if err := WriteTable(w, r.rep); err != nil {
			return err
		}
	}
	return nil
}

// signed writes a difference of durations with its sign.
func signed(d time.Duration) string {
	if d < 0 {
		return "-" + short(Duration(-d))
	}
	return "+" + short(Duration(d))
}

// TimerNotes are the notes a report carries about its timers: a pool
// whose provisioning time is unset.
func TimerNotes(timers []Timer) []string {
	var notes []string
	for _, t := range timers {
		if strings.HasPrefix(t.Note, "unset:") {
			notes = append(notes, t.Name+" is "+t.Note)
		}
	}
	return notes
}
