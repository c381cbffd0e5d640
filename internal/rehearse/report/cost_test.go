package report

import (
	"strings"
	"testing"

	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/cost"
)

// Pools that lack a price for the same reason are named in one line, with
// the fix for each; a pool with a reason of its own keeps its own; a pool
// that never ran is not named.
func TestUnpricedPoolsSayItOnce(t *testing.T) {
	noCloud := func(pool, field string) cost.PoolCost {
		return cost.PoolCost{Price: prices.PoolPrice{Pool: pool}, OnDemandHours: 2, Problem: &problem.Problem{
			Object: problem.Object{Kind: "Pool", Name: pool}, Field: field,
			Message: "the pool has no price: it names no machine.type, and the rehearsal no cloud",
			Fix:     "set " + field + `: {onDemand: "2.01"}, or rehearse with --cloud aws|azure|gcp`,
		}}
	}
	spot := cost.PoolCost{Price: prices.PoolPrice{Pool: "spot-gpu"}, SpotHours: 1, Problem: &problem.Problem{
		Object: problem.Object{Kind: "Pool", Name: "spot-gpu"}, Message: "the pool ran 1.0 spot node-hours and has no spot price", Fix: "give it a spot price",
	}}
	idle := noCloud("idle", "spec.pools[4].price")
	idle.OnDemandHours = 0
	lines := unpriced([]cost.PoolCost{
		noCloud("system", "spec.pools[0].price"), noCloud("cpu", "spec.pools[1].price"), spot, noCloud("gpu", "spec.pools[2].price"), idle,
	})
	if len(lines) != 2 {
		t.Fatalf("%d paragraphs, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	want := "Pools system, cpu, gpu have no price, each because it names no machine.type, and the rehearsal no cloud\n" +
		`    fix: set each one's price (spec.pools[0].price, spec.pools[1].price, spec.pools[2].price): {onDemand: "2.01"}, or rehearse with --cloud aws|azure|gcp`
	if lines[0] != want {
		t.Errorf("got\n%s\nwant\n%s", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], "Pool/spot-gpu: the pool ran 1.0 spot node-hours") {
		t.Errorf("the spot pool's own reason: %q", lines[1])
	}
}
