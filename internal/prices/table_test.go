package prices

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/export"
)

// The shipped table reads, and every row says where and when its price
// holds.
func TestShippedTable(t *testing.T) {
	rows := Shipped().Rows()
	if len(rows) < 100 {
		t.Fatalf("the shipped table has %d rows", len(rows))
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.Source, "https://") || r.Date == "" || r.Region == "" {
			t.Errorf("line %d (%s): source %q, date %q, region %q", r.Line, r.Type, r.Source, r.Date, r.Region)
		}
	}
}

// Rows worked out by hand: the list price, and the spot price the
// typical discount gives.
func TestShippedPrices(t *testing.T) {
	for _, tc := range []struct {
		typ, onDemand, spot string
	}{
		{"g6.8xlarge", "2.0144", "0.80576"},             // 60% off
		{"m6i.4xlarge", "0.768", "0.3072"},              // 60% off
		{"g4dn.xlarge", "0.526", "0.1578"},              // 70% off
		{"Standard_NC24ads_A100_v4", "3.673", "1.4692"}, // 60% off
		{"Standard_D16s_v5", "0.768", "0.1536"},         // 80% off
		{"n2-standard-16", "0.776944", "0.233083"},      // 70% off, to the millionth
		{"g2-standard-32", "1.73", "0.692"},             // 60% off
		{"p5.48xlarge", "98.32", ""},                    // no typical spot discount known
		{"Standard_B2ms", "0.0832", ""},                 // B-series has no spot
	} {
		r, ok := Shipped().Find(tc.typ)
		if !ok {
			t.Errorf("%s: no row", tc.typ)
			continue
		}
		spot, hasSpot := r.Spot()
		got := ""
		if hasSpot {
			got = spot.String()
		}
		if r.OnDemand.String() != tc.onDemand || got != tc.spot {
			t.Errorf("%s: on demand %s, spot %q; want %s, %q", tc.typ, r.OnDemand, got, tc.onDemand, tc.spot)
		}
	}
}

// Every instance type berth export gives a shipped template's pools, on
// every cloud, has a price, and so has every machine type the seeds name.
// (The templates set no machine.type: the instance type is export's.)
func TestTemplatesArePriced(t *testing.T) {
	for _, name := range blueprint.TemplateNames() {
		bp, err := blueprint.LoadTemplate(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, cloud := range Clouds() {
			for i, p := range bp.Spec.Pools {
				if p.Machine.Type != "" {
					if _, ok := Shipped().Find(p.Machine.Type); !ok {
						t.Errorf("template %s, pool %s: machine.type %s has no row", name, p.Name, p.Machine.Type)
					}
				}
				typ, err := export.InstanceType(bp, i, exportTargets[cloud])
				if err != nil {
					t.Errorf("template %s, pool %s on %s: %v", name, p.Name, cloud, err)
					continue
				}
				r, ok := Shipped().Find(typ)
				if !ok || r.Cloud != cloud {
					t.Errorf("template %s, pool %s on %s: %s has no %s row", name, p.Name, cloud, typ, cloud)
				}
				if _, hasSpot := r.Spot(); p.Capacity == v1alpha1.Spot && !hasSpot {
					t.Errorf("template %s, Spot pool %s on %s: %s has no spot price", name, p.Name, cloud, typ)
				}
			}
		}
	}
	// The seeds' AKS walk-through.
	for _, typ := range []string{"Standard_B2ms", "Standard_D2s_v4"} {
		if _, ok := Shipped().Find(typ); !ok {
			t.Errorf("seed type %s has no row", typ)
		}
	}
}

// Each mistake in a price table is a problem at its line and column,
// with a fix; every one is reported, not just the first.
func TestReadTableProblems(t *testing.T) {
	data := `# my prices
cloud,type,region,onDemand,spot,source,date
aws,g6.8xlarge,us-east-1,2.0144,60%,https://aws.amazon.com/ec2/pricing/on-demand/,2025-06-01
amazon,g6.xlarge,us-east-1,0.8048,60%,https://aws.amazon.com/ec2/pricing/on-demand/,2025-06-01
aws,g6.2xlarge,us-east-1,$0.98,60%,https://aws.amazon.com/ec2/pricing/on-demand/,2025-06-01
aws,g6.4xlarge,us-east-1,1.3232,100%,https://aws.amazon.com/ec2/pricing/on-demand/,2025-06-01
aws,g6.8xlarge,us-east-1,2.0144,0.81,https://aws.amazon.com/ec2/pricing/on-demand/,2025-06-01
aws,g6.12xlarge,us-east-1,4.6016,60%
aws,g6.16xlarge,us-east-1,3.3968,cheap,,2025-06-01
`
	_, ps := ReadTable("prices.csv", []byte(data))
	type place struct {
		Line         int
		Field, Start string
	}
	var got []place
	for _, p := range ps {
		if p.File != "prices.csv" || p.Fix == "" {
			t.Errorf("problem %q: file %q, fix %q", p.Message, p.File, p.Fix)
		}
		got = append(got, place{p.Line, p.Field, strings.SplitN(p.Message, " ", 2)[0]})
	}
	want := []place{
		{4, "cloud", `"amazon"`},
		{5, "onDemand", `"$0.98"`},
		{6, "spot", `"100%"`},
		{7, "type", "g6.8xlarge"},
		{8, "", "the"},
		{9, "source", "the"},
		{9, "spot", `"cheap"`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if _, ps := ReadTable("p.csv", []byte("cloud,type,price\n")); len(ps) != 1 || ps[0].Line != 1 || !strings.Contains(ps[0].Fix, Header) {
		t.Errorf("a wrong header: %v", ps)
	}
	if _, ps := ReadTable("p.csv", nil); len(ps) != 1 || !strings.Contains(ps[0].Message, "empty") {
		t.Errorf("an empty file: %v", ps)
	}
}

// --prices FILE replaces the shipped rows of its types and adds its
// others; the rest of the shipped table stays.
func TestLoadOverrides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.csv")
	data := Header + "\n" +
		"aws,g6.8xlarge,eu-west-1,2.27,1.02,https://example.com/quote,2026-01-15\n" +
		"gcp,n1-standard-4,us-central1,0.54,,https://example.com/quote,2026-01-15\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := tab.Find("g6.8xlarge")
	spot, _ := r.Spot()
	if r.OnDemand.String() != "2.27" || spot.String() != "1.02" || r.Region != "eu-west-1" || r.File != path || r.Line != 2 {
		t.Errorf("g6.8xlarge = %+v, want the file's row", r)
	}
	if _, ok := tab.Find("n1-standard-4"); !ok {
		t.Error("the file's new row is missing")
	}
	if r, _ := tab.Find("g6.xlarge"); r.OnDemand.String() != "0.8048" {
		t.Errorf("g6.xlarge = %+v, want the shipped row", r)
	}
	if r, _ := Shipped().Find("g6.8xlarge"); r.OnDemand.String() != "2.0144" {
		t.Error("loading a file changed the shipped table")
	}
	if err := os.WriteFile(path, []byte(Header+"\naws,g6.8xlarge,us-east-1,2.0144,60%,,2026\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("a bad file: %v, want a problem at %s:2", err, path)
	}
}
