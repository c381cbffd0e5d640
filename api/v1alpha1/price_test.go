package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseDollars(t *testing.T) {
	for _, tc := range []struct {
		in     string
		micros int64
		str    string
	}{
		{"3.06", 3_060_000, "3.06"},
		{"0.0832", 83_200, "0.0832"},
		{"0.067006", 67_006, "0.067006"},
		{"98", 98_000_000, "98.00"},
		{"98.3", 98_300_000, "98.30"},
		{"0", 0, "0.00"},
	} {
		d, err := ParseDollars(tc.in)
		if err != nil {
			t.Errorf("ParseDollars(%q): %v", tc.in, err)
			continue
		}
		if d.Micros() != tc.micros || d.String() != tc.str {
			t.Errorf("ParseDollars(%q) = %d micros, %q; want %d, %q", tc.in, d.Micros(), d, tc.micros, tc.str)
		}
	}
	for _, bad := range []string{"", "$3.06", "3,06", "-1", "1e3", "3.0000001", ".5", "3.", "1,000.00", "1234567890"} {
		if _, err := ParseDollars(bad); err == nil {
			t.Errorf("ParseDollars(%q) succeeded", bad)
		}
	}
}

// A price reads the same quoted or as a bare number, and is written back
// quoted, exactly: no float ever holds it.
func TestPriceJSON(t *testing.T) {
	var p Price
	if err := json.Unmarshal([]byte(`{"onDemand": 3.06, "spot": "1.10"}`), &p); err != nil {
		t.Fatal(err)
	}
	if want := (Price{OnDemand: 3_060_000, Spot: 1_100_000}); p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"onDemand":"3.06","spot":"1.10"}`; got != want {
		t.Errorf("marshalled %s, want %s", got, want)
	}
	out, _ = json.Marshal(Price{OnDemand: 83_200})
	if got, want := string(out), `{"onDemand":"0.0832"}`; got != want {
		t.Errorf("marshalled %s, want %s: an unset spot is left out", got, want)
	}
	if err := json.Unmarshal([]byte(`{"onDemand": 1e2}`), &p); err == nil {
		t.Error("an exponent was accepted")
	}
}

func TestValidatePrice(t *testing.T) {
	pool := func(name string, capacity CapacityType, price *Price) Pool {
		return Pool{Name: name, Capacity: capacity, Autoscale: &Autoscale{Max: 1}, Price: price,
			Taints:  []Taint{MustParseTaint("work=true:NoSchedule")},
			Machine: Machine{CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi")}}
	}
	bp := &Blueprint{
		APIVersion: GroupVersion, Kind: Kind, Metadata: Metadata{Name: "t"},
		Spec: Spec{Pools: []Pool{
			{Name: "system", Mode: ModeSystem, Count: ptr(int32(1)), Machine: Machine{CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi")},
				Taints: []Taint{MustParseTaint("CriticalAddonsOnly=true:NoSchedule")}, Price: &Price{OnDemand: MustParseDollars("0.192")}},
			pool("spot-ok", Spot, &Price{OnDemand: MustParseDollars("3.06"), Spot: MustParseDollars("1.10")}),
			pool("no-on-demand", OnDemand, &Price{}),
			pool("spot-without-spot", Spot, &Price{OnDemand: MustParseDollars("3.06")}),
			pool("on-demand-with-spot", OnDemand, &Price{OnDemand: MustParseDollars("3.06"), Spot: MustParseDollars("1.10")}),
			pool("spot-above", Spot, &Price{OnDemand: MustParseDollars("1"), Spot: MustParseDollars("1.5")}),
		}},
	}
	SetDefaults(bp)
	errs, warnings := Validate(bp)
	type place struct{ Field, Message string }
	var gotErrs, gotWarnings []place
	for _, p := range errs {
		gotErrs = append(gotErrs, place{p.Field, p.Message})
		if p.Fix == "" {
			t.Errorf("%s has no fix", p.Field)
		}
	}
	for _, p := range warnings {
		gotWarnings = append(gotWarnings, place{p.Field, p.Message})
	}
	wantErrs := []place{
		{"spec.pools[2].price.onDemand", "an on-demand price greater than zero is required"},
		{"spec.pools[3].price.spot", "pool spot-without-spot is Spot capacity, and its node-hours cost the spot price"},
	}
	wantWarnings := []place{
		{"spec.pools[4].price.spot", "pool on-demand-with-spot is OnDemand capacity: its spot price is never used"},
		{"spec.pools[5].price.spot", "the spot price (1.50) is above the on-demand price (1.00), so spot would cost more, not save"},
	}
	if diff := cmp.Diff(wantErrs, gotErrs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantWarnings, gotWarnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
