package report

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/cost"
)

// waited is a report on seed whose one group waited p50 at the median.
func waited(seed int64, p50 time.Duration) *Report {
	return &Report{Seed: seed, Trace: "t.csv", Blueprint: "shop", Groups: []GroupResult{{Team: "team-a", Class: "training", Jobs: 2, WaitP50: Duration(p50)}}}
}

func spreadNamed(t *testing.T, spreads []Spread, name string) Spread {
	t.Helper()
	for _, s := range spreads {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no figure %q among %d", name, len(spreads))
	return Spread{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

// Three replications waiting 10, 60 and 20 seconds: the median is 20,
// the range 10 to 60, and the interval of the mean 30 ± t(2)·s/√3 with
// s = √((20² + 30² + 10²)/2) = √700, from zero (no wait is negative).
func TestSpreadsAreTheHandComputation(t *testing.T) {
	reps := []*Report{waited(1, 10*time.Second), waited(2, 60*time.Second), waited(3, 20*time.Second)}
	s := spreadNamed(t, Spreads(reps), "team-a/training wait p50")
	half := 4.303 * math.Sqrt(700) / math.Sqrt(3)
	if s.N != 3 || s.Median != 20 || s.Min != 10 || s.Max != 60 || s.Low != 0 || !near(s.High, 30+half) {
		t.Errorf("spread %+v; want n 3, median 20, range 10–60, interval 0–%.2f", s, 30+half)
	}
	var b strings.Builder
	if err := WriteSpreads(&b, reps); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "seeds 1–3") || !regexp.MustCompile(`team-a/training wait p50 +20s +10s – 1m`).MatchString(b.String()) {
		t.Errorf("the table does not give the seeds and the median:\n%s", b.String())
	}
}

// B's wait is lower than A's on every seed by about the same: B better.
// A difference that changes sign from seed to seed shows nothing; one
// the same on every seed is certain, and worse for a wait that grew.
func TestPairedVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []time.Duration
		want Verdict
	}{
		{"lower on every seed", []time.Duration{100, 120, 110}, []time.Duration{90, 108, 99}, BBetter},
		{"either way", []time.Duration{100, 100, 100}, []time.Duration{105, 95, 100}, NoDifference},
		{"the same rise on every seed", []time.Duration{100, 50, 70}, []time.Duration{103, 53, 73}, BWorse},
		{"one pair", []time.Duration{100}, []time.Duration{200}, NoDifference},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b []*Report
			for i := range tc.a {
				a = append(a, waited(int64(i+1), tc.a[i]*time.Second))
				b = append(b, waited(int64(i+1), tc.b[i]*time.Second))
			}
			rows, err := Compare(a, b)
			if err != nil {
				t.Fatal(err)
			}
			var got *Paired
			for i := range rows {
				if rows[i].Name == "team-a/training wait p50" {
					got = &rows[i]
				}
			}
			if got == nil || got.Verdict != tc.want {
				t.Errorf("verdict %+v; want %q", got, tc.want)
			}
		})
	}
}

func TestPairsOnDifferentSeedsAreRefused(t *testing.T) {
	_, err := Compare([]*Report{waited(1, time.Second)}, []*Report{waited(2, time.Second)})
	if err == nil || !strings.Contains(err.Error(), "seed 1 and B on seed 2") {
		t.Errorf("Compare of seeds 1 and 2: %v; want the seeds named", err)
	}
}

// A rehearsal none of whose pools has a price (no --cloud) costs $0.00
// on every seed: no cost figure to compare, not "no difference". One
// pool with a price makes the cost a figure.
func TestCostIsAFigureOnlyWhenPriced(t *testing.T) {
	has := func(r *Report) bool {
		for _, f := range Figures(r) {
			if f.Name == "cost, total" {
				return true
			}
		}
		return false
	}
	r := waited(1, time.Minute)
	r.Cost = &cost.Report{Pools: []cost.PoolCost{{OnDemandHours: 3, Problem: problem.New("pass --cloud", "pool gpu has no price")}}}
	if has(r) {
		t.Error("a rehearsal with no pool priced has a cost figure")
	}
	money := cost.Money(1234)
	r.Cost.Pools = append(r.Cost.Pools, cost.PoolCost{OnDemandHours: 2, Cost: &money})
	r.Cost.Total = money
	if !has(r) {
		t.Error("a rehearsal with a priced pool has no cost figure")
	}
}
