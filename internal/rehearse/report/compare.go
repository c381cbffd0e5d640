package report

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
	dur := func(measure string, v both[Duration]) {
		x, y := v.a, v.b
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
	num := func(measure string, v both[float64], format string) {
		x, y := v.a, v.b
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

	groups, order := pair(a.Groups, b.Groups, func(g *GroupResult) string { return g.Team + "/" + g.Class })
	for _, k := range order {
		p := groups[k]
		// A group none of whose jobs ran has no waits: "-", not 0s.
		ran := [2]*GroupResult{}
		for i, g := range p {
			if g != nil && g.NeverRan < g.Jobs {
				ran[i] = g
			}
		}
		dur(k+" wait p50", side(ran, func(g *GroupResult) Duration { return g.WaitP50 }))
		dur(k+" wait p95", side(ran, func(g *GroupResult) Duration { return g.WaitP95 }))
		dur(k+" wait max", side(ran, func(g *GroupResult) Duration { return g.WaitMax }))
		num(k+" quota-refused job-hours", side(p, func(g *GroupResult) float64 { return time.Duration(g.QuotaRefused).Hours() }), "%.1f")
		num(k+" jobs never ran", side(p, func(g *GroupResult) float64 { return float64(g.NeverRan) }), "%.0f")
	}

	pools, order := pair(a.Pools, b.Pools, func(p *PoolResult) string { return p.Name })
	var idleA, idleB float64
	for _, name := range order {
		p := pools[name]
		num("pool "+name+" node-hours", side(p, func(p *PoolResult) float64 { return p.NodeHours }), "%.1f")
		if (p[0] != nil && p[0].GPUHours > 0) || (p[1] != nil && p[1].GPUHours > 0) {
			num("pool "+name+" idle GPU-hours", side(p, func(p *PoolResult) float64 { return p.GPUHoursIdle }), "%.1f")
		}
		if p[0] != nil {
			idleA += p[0].GPUHoursIdle
		}
		if p[1] != nil {
			idleB += p[1].GPUHoursIdle
		}
	}
	num("idle GPU-hours, all pools", both[float64]{&idleA, &idleB}, "%.1f")

	services, order := pair(a.Services, b.Services, func(s *ServiceResult) string { return s.Team + "/" + s.Name })
	for _, k := range order {
		dur("service "+k+" below budget", side(services[k], func(s *ServiceResult) Duration { return s.BelowBudget }))
	}
	storage, order := pair(a.Storage, b.Storage, func(s *StorageResult) string { return s.Class })
	for _, k := range order {
		num("storage "+k+" GiB-hours", side(storage[k], func(s *StorageResult) float64 { return s.GiBHours }), "%.1f")
	}
	queues, order := pair(a.Queues, b.Queues, func(q *QueueResult) string { return q.Team })
	for _, k := range order {
		q := queues[k]
		num(k+" job-hours suspended in its queue", side(q, func(q *QueueResult) float64 { return time.Duration(q.Suspended).Hours() }), "%.1f")
		num(k+" GPU-hours borrowed", side(q, func(q *QueueResult) float64 { return q.BorrowedGPUHours }), "%.1f")
		num(k+" GPU-hours lent", side(q, func(q *QueueResult) float64 { return q.LentGPUHours }), "%.1f")
		num(k+" preemptions by reclaim", side(q, func(q *QueueResult) float64 { return float64(q.PreemptedReclaim) }), "%.0f")
	}
	if ra, rb := replacementHours(a), replacementHours(b); ra != nil || rb != nil {
		num("checkpointed replacements' wait hours (zone-held)", both[float64]{ra, rb}, "%.2f")
	}
	rows = append(rows, compareCost(a, b)...)
	return rows
}

// replacementHours is how long the replacements of checkpointed training
// waited to start, in all; nil when no such Job had one.
func replacementHours(r *Report) *float64 {
	var total float64
	seen := false
	for _, j := range r.Jobs {
		if j.ReplacementWait != nil {
			total += time.Duration(*j.ReplacementWait).Hours()
			seen = true
		}
	}
	if !seen {
		return nil
	}
	return &total
}

// pair matches the entries of two reports by key, in the order the first
// report lists them and then the second's: an entry one report lacks is
// nil on that side.
func pair[T any](a, b []T, key func(*T) string) (map[string][2]*T, []string) {
	out := map[string][2]*T{}
	var order []string
	for side, list := range [][]T{a, b} {
		for i := range list {
			k := key(&list[i])
			p, ok := out[k]
			if !ok {
				order = append(order, k)
			}
			p[side] = &list[i]
			out[k] = p
		}
	}
	return out, order
}

// both is one measure of two rehearsals; nil where one lacks it.
type both[V any] struct{ a, b *V }

// side reads one measure of both sides of a pair.
func side[T, V any](p [2]*T, f func(*T) V) both[V] {
	var out both[V]
	if p[0] != nil {
		v := f(p[0])
		out.a = &v
	}
	if p[1] != nil {
		v := f(p[1])
		out.b = &v
	}
	return out
}

// WriteComparison writes two rehearsals of the same trace side by side,
// with what changed from the first to the second.
func WriteComparison(w io.Writer, a, b *Report) error {
	da, db := Designs(a, b)
	fmt.Fprintf(w, "Trace %s, seed %d: A is %s, B is %s\n\n", a.Trace, a.Seed, da, db)
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
