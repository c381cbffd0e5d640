package cost

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/prices"
)

// The hand-worked trace on the retail blueprint priced as on
// AWS: four 1-GPU training jobs of an hour each on the spot GPU pool
// (four g6.8xlarge spot node-hours at 60% off), the system pool's two
// nodes and the CPU pool's four for that hour, team-b's batch holding
// 16 of the CPU pool's 64 core-hours.
//
//	system    2 × $0.192                 = $0.384   → $0.38, all unallocated
//	cpu       4 × $0.768                 = $3.072   → $3.07: team-b 16/64 = $0.7675 → $0.77, unallocated $2.30
//	spot-gpu  4 × $2.0144 × 40%          = $3.22304 → $3.22, all team-a's (4 of 4 GPU-hours)
//	          on demand 4 × $2.0144      = $8.0576  → $8.06; saved $4.83456 → $4.83, 60.0%
func TestComputeByHand(t *testing.T) {
	priced := prices.Price(blueprint.MustLoadTemplate("retail"), prices.Shipped(), prices.AWS)
	r, err := Compute(priced, []Usage{
		{Pool: "system", OnDemandHours: 2},
		{Pool: "cpu", OnDemandHours: 4, Teams: map[string]Resources{"team-b": {CPUHours: 16}}},
		// team-a's CPU requests on a GPU pool do not count: GPU-hours do.
		{Pool: "spot-gpu", SpotHours: 4, Teams: map[string]Resources{"team-a": {GPUHours: 4, CPUHours: 8}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	type pool struct {
		Pool              string
		Cost, Unallocated string
		Saved, AtOnDemand string
		Shares            string
	}
	var got []pool
	for _, p := range r.Pools {
		if p.Cost == nil {
			t.Fatalf("pool %s has no cost: %v", p.Price.Pool, p.Problem)
		}
		var shares []string
		for _, s := range p.Teams {
			shares = append(shares, s.Team+" "+s.Cost.String())
		}
		got = append(got, pool{p.Price.Pool, p.Cost.String(), p.Unallocated.String(), p.SpotSavings.String(), p.SpotAtOnDemand.String(), strings.Join(shares, ", ")})
	}
	want := []pool{
		{"system", "$0.38", "$0.38", "$0.00", "$0.00", ""},
		{"cpu", "$3.07", "$2.30", "$0.00", "$0.00", "team-b $0.77"},
		{"gpu", "$0.00", "$0.00", "$0.00", "$0.00", ""},
		{"spot-gpu", "$3.22", "$0.00", "$4.83", "$8.06", "team-a $3.22"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	if r.Total != 667 || r.Unallocated != 268 || r.SpotSavings != 483 || r.SpotAtOnDemand != 806 || r.SpotSavingsPercent != 60 {
		t.Errorf("total %s, unallocated %s, saved %s of %s (%.1f%%); want $6.67, $2.68, $4.83 of $8.06 (60.0%%)",
			r.Total, r.Unallocated, r.SpotSavings, r.SpotAtOnDemand, r.SpotSavingsPercent)
	}
	var teams []string
	for _, tc := range r.Teams {
		teams = append(teams, tc.Team+" "+tc.Cost.String())
	}
	if diff := cmp.Diff([]string{"team-a $3.22", "team-b $0.77"}, teams); diff != "" {
		t.Errorf("teams (-want +got):\n%s", diff)
	}
}

// A dollar shared by three teams with a GPU-hour each is 34, 33 and 33
// cents: rounding each share alone would lose a cent.
func TestComputeSharesToTheCent(t *testing.T) {
	priced := []prices.PoolPrice{{Pool: "gpu", Capacity: v1alpha1.OnDemand, OnDemand: v1alpha1.MustParseDollars("1"), GPUs: 3, CPU: 24}}
	r, err := Compute(priced, []Usage{{Pool: "gpu", OnDemandHours: 1, Teams: map[string]Resources{
		"a": {GPUHours: 1}, "b": {GPUHours: 1}, "c": {GPUHours: 1},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []Money
	for _, tc := range r.Teams {
		got = append(got, tc.Cost)
	}
	if diff := cmp.Diff([]Money{34, 33, 33}, got); diff != "" || r.Unallocated != 0 || r.Total != 100 {
		t.Errorf("shares (-want +got):\n%s; unallocated %s, total %s", diff, r.Unallocated, r.Total)
	}
}

// However the hours fall, every pool's shares and unallocated add up to
// its cost, and the teams' costs and unallocated to the total, to the
// cent; requests beyond what the nodes held leave nothing unallocated.
func TestComputeAddsUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var priced []prices.PoolPrice
		var usage []Usage
		for i := range 1 + rng.IntN(5) {
			p := prices.PoolPrice{Pool: string(rune('a' + i)), OnDemand: v1alpha1.Dollars(1 + rng.Int64N(50_000_000)), CPU: float64(1 + rng.IntN(96))}
			if rng.IntN(2) == 0 {
				p.GPUs = int32(1 + rng.IntN(8))
			}
			if rng.IntN(2) == 0 {
				p.Capacity, p.Spot = v1alpha1.Spot, v1alpha1.Dollars(1+rng.Int64N(int64(p.OnDemand)))
			}
			priced = append(priced, p)
			u := Usage{Pool: p.Pool, OnDemandHours: rng.Float64() * 1000}
			if p.Spot > 0 {
				u.OnDemandHours, u.SpotHours = 0, rng.Float64()*1000
			}
			u.Teams = map[string]Resources{}
			for range rng.IntN(6) {
				// up to 1.5 times what the pool held, now and then
				u.Teams[string(rune('p'+rng.IntN(6)))] = Resources{GPUHours: rng.Float64() * u.SpotHours * 3 * float64(p.GPUs) / 5, CPUHours: rng.Float64() * (u.OnDemandHours + u.SpotHours) * p.CPU / 2}
			}
			usage = append(usage, u)
		}
		r, err := Compute(priced, usage)
		if err != nil {
			t.Fatal(err)
		}
		sum := r.Unallocated
		for _, tc := range r.Teams {
			sum += tc.Cost
		}
		if sum != r.Total {
			t.Fatalf("round %d: teams and unallocated add up to %s, the total is %s", round, sum, r.Total)
		}
		for _, p := range r.Pools {
			s := *p.Unallocated
			for _, sh := range p.Teams {
				s += *sh.Cost
			}
			if s != *p.Cost || s < 0 || *p.Unallocated < 0 {
				t.Fatalf("round %d, pool %s: shares %s, unallocated %s, cost %s", round, p.Price.Pool, s, p.Unallocated, p.Cost)
			}
		}
	}
}

// A pool with no price is left out of every figure and says so: its
// cost is null in JSON, not 0, and the teams that used it know.
func TestComputeUnpriced(t *testing.T) {
	priced := prices.Price(blueprint.MustLoadTemplate("retail"), prices.Shipped(), "") // no cloud, no machine.type: nothing priced
	priced[1] = prices.PoolPrice{Pool: "cpu", OnDemand: v1alpha1.MustParseDollars("0.768"), CPU: 16, From: "test"}
	r, err := Compute(priced, []Usage{
		{Pool: "cpu", OnDemandHours: 1, Teams: map[string]Resources{"team-a": {CPUHours: 8}}},
		{Pool: "spot-gpu", SpotHours: 2, Teams: map[string]Resources{"team-a": {GPUHours: 2}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"spot-gpu"}, r.Unpriced); diff != "" {
		t.Errorf("unpriced (-want +got):\n%s", diff)
	}
	if r.Total != 77 || len(r.Teams) != 1 || r.Teams[0].Cost != 39 || !cmp.Equal(r.Teams[0].Unpriced, []string{"spot-gpu"}) {
		t.Errorf("total %s, teams %+v; want $0.77 and team-a $0.39 (half of 77 cents, the tie to the team) without spot-gpu", r.Total, r.Teams)
	}
	spot := r.Pools[3]
	if spot.Cost != nil || spot.Unallocated != nil || spot.Problem == nil || spot.Problem.Field != "spec.pools[3].price" {
		t.Errorf("spot-gpu: %+v", spot)
	}
	data, err := json.Marshal(spot)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(data); !strings.Contains(s, `"cost":null`) || !strings.Contains(s, `"problem":{`) {
		t.Errorf("JSON: %s", s)
	}

	// Spot node-hours on a pool whose price has no spot part.
	priced = []prices.PoolPrice{{Pool: "cpu", OnDemand: v1alpha1.MustParseDollars("0.768"), CPU: 16}}
	r, _ = Compute(priced, []Usage{{Pool: "cpu", OnDemandHours: 1, SpotHours: 1}})
	if r.Pools[0].Cost != nil || r.Pools[0].Problem == nil || !strings.Contains(r.Pools[0].Problem.Message, "no spot price") {
		t.Errorf("spot hours without a spot price: %+v", r.Pools[0])
	}
}

func TestComputeRefusesBadUsage(t *testing.T) {
	priced := []prices.PoolPrice{{Pool: "cpu", OnDemand: 1, CPU: 1}}
	for _, u := range []Usage{
		{Pool: "gpu", OnDemandHours: 1},
		{Pool: "cpu", OnDemandHours: -1},
		{Pool: "cpu", Teams: map[string]Resources{"a": {CPUHours: -1}}},
	} {
		if _, err := Compute(priced, []Usage{u}); err == nil {
			t.Errorf("%+v accepted", u)
		}
	}
}

func TestMoney(t *testing.T) {
	for _, tc := range []struct {
		m          Money
		str, jsonV string
	}{
		{0, "$0.00", "0.00"},
		{5, "$0.05", "0.05"},
		{123456789, "$1,234,567.89", "1234567.89"},
		{-105, "-$1.05", "-1.05"},
	} {
		data, _ := json.Marshal(tc.m)
		if tc.m.String() != tc.str || string(data) != tc.jsonV {
			t.Errorf("%d: %s, %s; want %s, %s", int64(tc.m), tc.m, data, tc.str, tc.jsonV)
		}
	}
}
