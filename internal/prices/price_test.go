package prices

import (
	"strings"
	"testing"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

// On a cloud, the retail pools are priced as the instance types berth
// export gives them there; the Spot pool at the row's spot price.
func TestPriceByCloud(t *testing.T) {
	for _, tc := range []struct {
		cloud Cloud
		want  map[string][2]string // pool: on demand, spot
	}{
		{AWS, map[string][2]string{"system": {"0.192", "0.0768"}, "cpu": {"0.768", "0.3072"}, "gpu": {"2.0144", "0.80576"}, "spot-gpu": {"2.0144", "0.80576"}}},
		{Azure, map[string][2]string{"system": {"0.192", "0.0384"}, "cpu": {"0.768", "0.1536"}, "gpu": {"3.673", "1.4692"}, "spot-gpu": {"3.673", "1.4692"}}},
		{GCP, map[string][2]string{"system": {"0.134012", "0.040204"}, "cpu": {"0.776944", "0.233083"}, "gpu": {"1.73", "0.692"}, "spot-gpu": {"1.73", "0.692"}}},
	} {
		for _, p := range Price(blueprint.MustLoadTemplate("retail"), Shipped(), tc.cloud) {
			if p.Problem != nil {
				t.Errorf("%s %s: %v", tc.cloud, p.Pool, p.Problem)
				continue
			}
			w := tc.want[p.Pool]
			if p.OnDemand.String() != w[0] || p.Spot.String() != w[1] || p.Row == nil || p.Row.Cloud != tc.cloud {
				t.Errorf("%s %s: %s / %s from %s; want %s / %s", tc.cloud, p.Pool, p.OnDemand, p.Spot, p.From, w[0], w[1])
			}
		}
	}
}

// A pool's own price comes first; machine.type is looked up without a
// cloud; and a pool nothing prices says so, with the field to set, never
// a price of zero.
func TestPriceSources(t *testing.T) {
	bp := blueprint.MustLoadTemplate("retail")
	pools := bp.Spec.Pools
	pools[0].Machine.Type = "m6i.xlarge"                                          // system: in the table
	pools[1].Machine.Type = "c7i.4xlarge"                                         // cpu: not in it
	pools[2].Price = &v1alpha1.Price{OnDemand: v1alpha1.MustParseDollars("3.06")} // gpu: its own
	pools[3].Machine.Type = "p5.48xlarge"                                         // spot-gpu: no spot price in the table
	got := Price(bp, Shipped(), "")

	if p := got[0]; p.Problem != nil || p.OnDemand.String() != "0.192" || !strings.HasPrefix(p.From, "aws m6i.xlarge in us-east-1, 2024 list price") {
		t.Errorf("system: %+v", p)
	}
	if p := got[1]; p.Problem == nil || p.OnDemand != 0 ||
		p.Problem.Field != "spec.pools[1].price" || !strings.Contains(p.Problem.Message, "no row for its machine.type c7i.4xlarge") ||
		!strings.Contains(p.Problem.Fix, "--prices FILE") || !strings.Contains(p.Problem.Fix, `set spec.pools[1].price: {onDemand: "2.01"}`) {
		t.Errorf("cpu: %+v %v", p, p.Problem)
	}
	if p := got[2]; p.Problem != nil || p.OnDemand.String() != "3.06" || p.From != "spec.pools[2].price" || p.Row != nil {
		t.Errorf("gpu: %+v", p)
	}
	if p := got[3]; p.Problem == nil || !strings.Contains(p.Problem.Message, "no spot price") || !strings.Contains(p.Problem.Fix, `spot: "0.81"`) {
		t.Errorf("spot-gpu: %+v %v", p, p.Problem)
	}

	// No machine.type and no cloud: nothing to look up.
	for _, p := range Price(blueprint.MustLoadTemplate("retail"), Shipped(), "") {
		if p.Problem == nil || !strings.Contains(p.Problem.Message, "no machine.type") || !strings.Contains(p.Problem.Fix, "--cloud") {
			t.Errorf("%s without a cloud: %+v", p.Pool, p.Problem)
		}
	}
}

// On a cloud, a shape export cannot buy there has no price, and says
// why; machine.type still prices it when the table lists it on that
// cloud.
func TestPriceExportGivesNoType(t *testing.T) {
	bp := blueprint.MustLoadTemplate("retail")
	bp.Spec.Pools[1].Machine.CPU.Set(1000) // no catalog type has 1000 CPUs
	got := Price(bp, Shipped(), AWS)
	if p := got[1]; p.Problem == nil || !strings.Contains(p.Problem.Message, "berth export gives it no aws instance type") {
		t.Errorf("cpu: %+v", p.Problem)
	}
	bp.Spec.Pools[1].Machine.Type = "m6i.32xlarge"
	if p := Price(bp, Shipped(), AWS)[1]; p.Problem != nil || p.OnDemand.String() != "6.144" {
		t.Errorf("cpu with machine.type: %+v", p)
	}
	if p := Price(bp, Shipped(), GCP)[1]; p.Problem == nil {
		t.Errorf("cpu on gcp priced by an aws machine.type: %+v", p)
	}
}
