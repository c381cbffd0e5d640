// Package cost is what a rehearsed design costs: a price per node-hour
// for each pool, on demand and on spot, and the arithmetic that turns a
// rehearsal's node-hours into cost per pool and per team, and into spot
// savings against the same node-hours on demand.
//
// A pool's price is the blueprint's pools[].price, else a row of the
// price table (prices.Table) for its instance type. berth ships one
// (prices.csv: list prices of the three clouds' common CPU and GPU
// types, each row with its source and date, written down and never
// fetched); `--prices FILE` gives rows of one's own in its place. A pool
// with no price says so, and how to give one: the report never counts it
// as $0.
//
// The package is pure: the rehearsal engine measures node-hours and
// requests, prices.Price finds the prices, Compute does the sums, and the
// engine renders the Report (its JSON tags are its JSON form).
package cost

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/problem"
)

// Money is an amount of US dollars in whole cents. Every sum in a Report
// is of Money, so its parts add up to its totals to the cent.
type Money int64

// cents rounds an amount in millionths of a dollar to the nearest cent.
func cents(micros float64) Money { return Money(math.Round(micros / 10_000)) }

// String writes the amount as people read it: "$1,234.56", "-$0.05".
func (m Money) String() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	whole := strconv.FormatInt(int64(m)/100, 10)
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	return fmt.Sprintf("%s$%s.%02d", sign, whole, int64(m)%100)
}

// MarshalJSON writes the amount as a JSON number of dollars with two
// decimals (1234.56), exactly.
func (m Money) MarshalJSON() ([]byte, error) {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Appendf(nil, "%s%d.%02d", sign, int64(m)/100, int64(m)%100), nil
}

// UnmarshalJSON reads what MarshalJSON writes, exactly: a number of
// dollars with at most two decimals (a report read back, as `berth
// rehearse --vs` reads its children's).
func (m *Money) UnmarshalJSON(b []byte) error {
	s := string(b)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 2 || whole == "" {
		return fmt.Errorf("%s is not an amount of dollars to the cent", b)
	}
	frac += strings.Repeat("0", 2-len(frac))
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an amount of dollars to the cent", b)
	}
	c, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an amount of dollars to the cent", b)
	}
	*m = Money(w*100 + c)
	if neg {
		*m = -*m
	}
	return nil
}

// Resources are what a team's pods requested on a pool over a rehearsal,
// integrated over time.
type Resources struct {
	GPUHours float64 `json:"gpuHours"`
	// CPUHours are core-hours.
	CPUHours float64 `json:"cpuHours"`
}

// Usage is what a rehearsal measured on one pool.
type Usage struct {
	Pool string
	// OnDemandHours and SpotHours are node-hours, from each node's
	// creation to its deletion, of on-demand and of spot nodes.
	OnDemandHours float64
	SpotHours     float64
	// Teams are the resources each team's pods requested on the pool.
	Teams map[string]Resources
}

// Report is what a rehearsal cost. Its teams' costs and Unallocated add
// up to Total exactly; every figure leaves out the pools in Unpriced.
type Report struct {
	Pools []PoolCost `json:"pools"`
	// Teams are sorted by name.
	Teams []TeamCost `json:"teams"`
	// Unallocated is what no team's requests account for: idle
	// capacity, system pods and reserved resources.
	Unallocated Money `json:"unallocated"`
	Total       Money `json:"total"`
	// SpotSavings are the spot node-hours at the on-demand price less
	// what they cost on spot; SpotAtOnDemand is the first of the two.
	SpotSavings    Money `json:"spotSavings"`
	SpotAtOnDemand Money `json:"spotAtOnDemand"`
	// SpotSavingsPercent is SpotSavings as a share of SpotAtOnDemand, to
	// a tenth of a percent; zero without spot node-hours.
	SpotSavingsPercent float64 `json:"spotSavingsPercent"`
	// Unpriced names the pools that ran nodes and have no price (each
	// PoolCost says why and how to give one): Total and the teams' costs
	// leave them out.
	Unpriced []string `json:"unpriced,omitempty"`
}

// Unit is what a pool's cost is shared among teams by.
type Unit string

const (
	GPUHours Unit = "GPU-hours"
	CPUHours Unit = "CPU-hours"
)

// PoolCost is what one pool cost, and who it cost it for.
type PoolCost struct {
	Price         prices.PoolPrice `json:"price"`
	OnDemandHours float64          `json:"onDemandHours"`
	SpotHours     float64          `json:"spotHours"`
	// Unit is GPU-hours on a GPU pool, CPU-hours on any other;
	// CapacityHours is how many of them the pool's nodes held.
	Unit          Unit    `json:"unit"`
	CapacityHours float64 `json:"capacityHours"`
	// Cost is nil when the pool has no price for the node-hours it ran
	// (Problem says why).
	Cost           *Money `json:"cost"`
	SpotSavings    Money  `json:"spotSavings"`
	SpotAtOnDemand Money  `json:"spotAtOnDemand"`
	// Teams are the shares of Cost in proportion to each team's Unit
	// requested, sorted by team; Unallocated is the rest.
	Teams       []Share `json:"teams,omitempty"`
	Unallocated *Money  `json:"unallocated"`
	// Problem says why the pool has no price and how to give one.
	Problem *problem.Problem `json:"problem,omitempty"`
}

// Share is one team's part of one pool's cost.
type Share struct {
	// Team, in a PoolCost; Pool, in a TeamCost.
	Team string `json:"team,omitempty"`
	Pool string `json:"pool,omitempty"`
	// Hours are the team's requests on the pool, in the pool's Unit.
	Hours float64 `json:"hours"`
	Unit  Unit    `json:"unit"`
	// Cost is nil when the pool has no price.
	Cost *Money `json:"cost"`
}

// TeamCost is what one team's requests cost, over every pool.
type TeamCost struct {
	Team string `json:"team"`
	// Cost leaves out the pools in Unpriced.
	Cost  Money   `json:"cost"`
	Pools []Share `json:"pools"`
	// Unpriced names the pools the team used that have no price.
	Unpriced []string `json:"unpriced,omitempty"`
}

// Compute turns each pool's measured usage into cost, priced by priced
// (prices.Price's, in pool order; a pool without usage ran no nodes). Usage of
// a pool prices does not name, or a negative figure, is the engine's
// mistake and an error.
func Compute(priced []prices.PoolPrice, usage []Usage) (Report, error) {
	byPool := map[string]Usage{}
	for _, u := range usage {
		if u.OnDemandHours < 0 || u.SpotHours < 0 {
			return Report{}, fmt.Errorf("pool %s: negative node-hours (%g on demand, %g spot)", u.Pool, u.OnDemandHours, u.SpotHours)
		}
		for team, r := range u.Teams {
			if r.GPUHours < 0 || r.CPUHours < 0 {
				return Report{}, fmt.Errorf("pool %s, team %s: negative resource-hours %+v", u.Pool, team, r)
			}
		}
		byPool[u.Pool] = u
	}
	known := map[string]bool{}
	for _, p := range priced {
		known[p.Pool] = true
	}
	for _, u := range usage {
		if !known[u.Pool] {
			return Report{}, fmt.Errorf("usage of pool %s, which the blueprint does not have", u.Pool)
		}
	}

	var r Report
	teams := map[string]*TeamCost{}
	// the savings' share from the exact amounts, not the rounded cents
	var saved, atOnDemand float64
	for _, p := range priced {
		pc := poolCost(p, byPool[p.Pool])
		r.Pools = append(r.Pools, pc)
		for _, s := range pc.Teams {
			tc := teams[s.Team]
			if tc == nil {
				tc = &TeamCost{Team: s.Team}
				teams[s.Team] = tc
			}
			tc.Pools = append(tc.Pools, Share{Pool: p.Pool, Hours: s.Hours, Unit: s.Unit, Cost: s.Cost})
			if s.Cost == nil {
				tc.Unpriced = append(tc.Unpriced, p.Pool)
				continue
			}
			tc.Cost += *s.Cost
		}
		if pc.Cost == nil {
			if pc.OnDemandHours+pc.SpotHours > 0 {
				r.Unpriced = append(r.Unpriced, p.Pool)
			}
			continue
		}
		r.Total += *pc.Cost
		r.Unallocated += *pc.Unallocated
		r.SpotSavings += pc.SpotSavings
		r.SpotAtOnDemand += pc.SpotAtOnDemand
		saved += pc.SpotHours * float64(p.OnDemand.Micros()-p.Spot.Micros())
		atOnDemand += pc.SpotHours * float64(p.OnDemand.Micros())
	}
	names := make([]string, 0, len(teams))
	for name := range teams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r.Teams = append(r.Teams, *teams[name])
	}
	if atOnDemand > 0 {
		r.SpotSavingsPercent = math.Round(1000*saved/atOnDemand) / 10
	}
	return r, nil
}

func poolCost(p prices.PoolPrice, u Usage) PoolCost {
	pc := PoolCost{Price: p, OnDemandHours: u.OnDemandHours, SpotHours: u.SpotHours, Unit: CPUHours, Problem: p.Problem}
	perNode := p.CPU
	if p.GPUs > 0 {
		pc.Unit, perNode = GPUHours, float64(p.GPUs)
	}
	nodeHours := u.OnDemandHours + u.SpotHours
	pc.CapacityHours = nodeHours * perNode
	teams := make([]string, 0, len(u.Teams))
	for team := range u.Teams {
		teams = append(teams, team)
	}
	sort.Strings(teams)
	used := make([]float64, len(teams))
	for i, team := range teams {
		used[i] = u.Teams[team].CPUHours
		if pc.Unit == GPUHours {
			used[i] = u.Teams[team].GPUHours
		}
	}
	if pc.Problem == nil && u.SpotHours > 0 && p.Spot == 0 {
		pc.Problem = poolProblem(p.Pool, fmt.Sprintf("the pool ran %.1f spot node-hours and has no spot price", u.SpotHours), "give the pool a spot price in its pools[].price, or its instance type a spot price or discount with --prices FILE")
	}
	if pc.Problem != nil {
		for i, team := range teams {
			pc.Teams = append(pc.Teams, Share{Team: team, Hours: used[i], Unit: pc.Unit})
		}
		return pc
	}

	od, spot := float64(p.OnDemand.Micros()), float64(p.Spot.Micros())
	cost := cents(u.OnDemandHours*od + u.SpotHours*spot)
	pc.Cost = &cost
	pc.SpotAtOnDemand = cents(u.SpotHours * od)
	pc.SpotSavings = cents(u.SpotHours * (od - spot))

	// Shares in proportion to the requests, the rest unallocated; when
	// the requests exceed what the nodes held (a measurement's rounding),
	// in proportion to the requests alone.
	total := 0.0
	for _, h := range used {
		total += h
	}
	weights := append(used[:len(used):len(used)], max(pc.CapacityHours-total, 0))
	parts := apportion(cost, weights)
	for i, team := range teams {
		pc.Teams = append(pc.Teams, Share{Team: team, Hours: used[i], Unit: pc.Unit, Cost: &parts[i]})
	}
	pc.Unallocated = &parts[len(teams)]
	return pc
}

// apportion splits total into parts in proportion to weights, to the
// cent, by largest remainder: each part its whole cents, then the cents
// left over one each to the parts with the largest fractions (ties to
// the first). The parts add up to total exactly. With no weight, the
// last part takes everything.
func apportion(total Money, weights []float64) []Money {
	parts := make([]Money, len(weights))
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	if sum <= 0 {
		parts[len(parts)-1] = total
		return parts
	}
	fractions := make([]float64, len(weights))
	left := total
	for i, w := range weights {
		exact := float64(total) * w / sum
		parts[i] = Money(math.Floor(exact))
		fractions[i] = exact - math.Floor(exact)
		left -= parts[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return fractions[order[a]] > fractions[order[b]] })
	for i := 0; left > 0; i = (i + 1) % len(order) {
		parts[order[i]]++
		left--
	}
	return parts
}

func poolProblem(pool, message, fix string) *problem.Problem {
	return &problem.Problem{Object: problem.Object{Kind: "Pool", Name: pool}, Message: message, Fix: fix}
}
