package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/cost"
)

// writeCost writes what the rehearsal cost, per pool and per team, and
// what spot saved; pools without a price say how to give one.
func writeCost(w io.Writer, c *cost.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPOOL\tPRICE/NODE-h\tFROM\tCOST\tSPOT SAVED")
	for _, p := range c.Pools {
		if p.Cost == nil {
			if p.Problem != nil && (p.OnDemandHours > 0 || p.SpotHours > 0) {
				fmt.Fprintf(tw, "%s\t-\tno price\t-\t-\n", p.Price.Pool)
			}
			continue
		}
		price := p.Price.OnDemand.String()
		if p.SpotHours > 0 {
			price = p.Price.Spot.String() + " spot"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Price.Pool, "$"+price, p.Price.From, dollars(*p.Cost), dollars(p.SpotSavings))
	}
	fmt.Fprintln(tw, "\nTEAM\tCOST")
	for _, t := range c.Teams {
		fmt.Fprintf(tw, "%s\t%s\n", t.Team, dollars(t.Cost))
	}
	fmt.Fprintf(tw, "unallocated\t%s\n", dollars(c.Unallocated))
	fmt.Fprintf(tw, "total\t%s\n", dollars(c.Total))
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.SpotAtOnDemand > 0 {
		fmt.Fprintf(w, "Spot saved %s: its node-hours would have cost %s on demand (%.1f%% less).\n", dollars(c.SpotSavings), dollars(c.SpotAtOnDemand), c.SpotSavingsPercent)
	}
	for _, line := range unpriced(c.Pools) {
		fmt.Fprintln(w, line)
	}
	return nil
}

// unpriced says why the pools that ran without a price have none: once
// for the pools that lack one for the same reason (the retail template
// rehearsed with no --cloud: every pool), with the fix for each.
func unpriced(pools []cost.PoolCost) []string {
	var order []string
	same := map[string][]*problem.Problem{}
	for _, p := range pools {
		if p.Problem == nil || p.OnDemandHours == 0 && p.SpotHours == 0 {
			continue
		}
		if _, seen := same[p.Problem.Message]; !seen {
			order = append(order, p.Problem.Message)
		}
		same[p.Problem.Message] = append(same[p.Problem.Message], p.Problem)
	}
	var out []string
	for _, message := range order {
		ps := same[message]
		if len(ps) == 1 {
			out = append(out, ps[0].String())
			continue
		}
		names := make([]string, len(ps))
		fields := make([]string, 0, len(ps))
		for i, p := range ps {
			names[i] = p.Object.Name
			if p.Field != "" {
				fields = append(fields, p.Field)
			}
		}
		fix := ps[0].Fix
		if len(fields) == len(ps) {
			// The fix names the first pool's field: name each one's.
			fix = strings.Replace(fix, ps[0].Field, "each one's price ("+strings.Join(fields, ", ")+")", 1)
		}
		why := strings.TrimPrefix(message, "the pool has no price: ")
		out = append(out, fmt.Sprintf("Pools %s have no price, each because %s\n    fix: %s", strings.Join(names, ", "), why, fix))
	}
	return out
}

func dollars(m cost.Money) string { return m.String() }

// compareCost lists the total and each team's cost of two rehearsals.
func compareCost(a, b *Report) []comparison {
	if a.Cost == nil || b.Cost == nil {
		return nil
	}
	rows := []comparison{{Measure: "cost, total", A: dollars(a.Cost.Total), B: dollars(b.Cost.Total), Diff: signedMoney(b.Cost.Total - a.Cost.Total)}}
	rows = append(rows, comparison{Measure: "spot saved", A: dollars(a.Cost.SpotSavings), B: dollars(b.Cost.SpotSavings), Diff: signedMoney(b.Cost.SpotSavings - a.Cost.SpotSavings)})
	if len(a.Cost.Unpriced)+len(b.Cost.Unpriced) > 0 {
		rows = append(rows, comparison{Measure: "pools without a price (left out)", A: fmt.Sprint(a.Cost.Unpriced), B: fmt.Sprint(b.Cost.Unpriced)})
	}
	return rows
}

func signedMoney(m cost.Money) string {
	if m < 0 {
		return m.String()
	}
	return "+" + m.String()
}
