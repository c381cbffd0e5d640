package rehearse

import (
	"fmt"
	"io"
	"text/tabwriter"

	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/rehearse/cost"
)

// costOf prices the pools' measured node-hours: a Spot pool's hours are
// spot hours, any other's on demand; each team's share is what its pods
// requested on the pool.
func costOf(prices []prices.PoolPrice, pools []PoolResult) (*cost.Report, error) {
	var usage []cost.Usage
	for _, p := range pools {
		u := cost.Usage{Pool: p.Name, Teams: map[string]cost.Resources{}}
		if p.Capacity == "Spot" {
			u.SpotHours = p.NodeHours
		} else {
			u.OnDemandHours = p.NodeHours
		}
		for _, t := range p.Teams {
			u.Teams[t.Team] = cost.Resources{GPUHours: t.GPUHours, CPUHours: t.CPUHours}
		}
		usage = append(usage, u)
	}
	rep, err := cost.Compute(prices, usage)
	if err != nil {
		return nil, err
	}
	return &rep, nil
}

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
	for _, p := range c.Pools {
		if p.Problem != nil && (p.OnDemandHours > 0 || p.SpotHours > 0) {
			fmt.Fprintf(w, "pool %s has no price: %s\n", p.Price.Pool, p.Problem)
		}
	}
	return nil
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
