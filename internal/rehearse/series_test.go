package rehearse

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/rehearse/report"
)

// The cost series has one point a moment, however many pools changed at
// it, and sums the pools in one order, so two rehearsals with the same
// nodes give the same floats.
func TestCostSeriesIsOnePointAMomentInOneOrder(t *testing.T) {
	at := func(d time.Duration) report.Duration { return report.Duration(d) }
	nodes := map[string][]report.Point{
		"cpu":  {{T: 0, V: 4}, {T: at(time.Hour), V: 2}, {T: at(2 * time.Hour), V: 2}},
		"gpu":  {{T: 0, V: 0}, {T: at(time.Hour), V: 1}, {T: at(2 * time.Hour), V: 1}},
		"spot": {{T: 0, V: 3}, {T: at(2 * time.Hour), V: 3}},
	}
	prices := []prices.PoolPrice{
		{Pool: "cpu", Capacity: v1alpha1.OnDemand, OnDemand: v1alpha1.MustParseDollars("0.10")},
		{Pool: "gpu", Capacity: v1alpha1.OnDemand, OnDemand: v1alpha1.MustParseDollars("1.00")},
		{Pool: "spot", Capacity: v1alpha1.Spot, OnDemand: v1alpha1.MustParseDollars("1.00"), Spot: v1alpha1.MustParseDollars("0.30")},
	}
	want := []report.Point{{T: 0, V: 0}, {T: at(time.Hour), V: 0.4 + 0.9}, {T: at(2 * time.Hour), V: 1.3 + 0.2 + 1 + 0.9}}
	first := accumulate(nodes, prices)
	if diff := cmp.Diff(want, first, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Fatalf("the cost series (-want +got):\n%s", diff)
	}
	for range 20 { // maps iterate in a new order each time
		if again := accumulate(nodes, prices); !cmp.Equal(first, again) {
			t.Fatalf("the cost series came out %v, then %v", first, again)
		}
	}
}
