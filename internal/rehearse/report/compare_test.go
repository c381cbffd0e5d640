package report

import (
	"strings"
	"testing"
	"time"
)

// Two designs side by side: a measure both have gets its difference, one
// only a design has shows "-" on the other side and no difference.
func TestCompareSideBySide(t *testing.T) {
	a := &Report{
		Groups: []GroupResult{{Team: "ml", Class: "training", Jobs: 2, WaitP95: Duration(70 * time.Minute), QuotaRefused: Duration(4 * time.Hour)}, {Team: "ml", Class: "batch", Jobs: 3, NeverRan: 3}},
		Pools:  []PoolResult{{Name: "gpu", NodeHours: 2, GPUHours: 2, GPUHoursIdle: 0.5}, {Name: "cpu", NodeHours: 1}},
	}
	b := &Report{
		Groups: []GroupResult{{Team: "ml", Class: "training", Jobs: 2, WaitP95: Duration(10 * time.Minute)}, {Team: "ml", Class: "batch", Jobs: 3, WaitP95: Duration(5 * time.Minute)}},
		Pools:  []PoolResult{{Name: "gpu", NodeHours: 2.5, GPUHours: 3, GPUHoursIdle: 1}, {Name: "spot", NodeHours: 1}, {Name: "cpu", NodeHours: 1}},
	}
	rows := map[string]comparison{}
	for _, c := range compare(a, b) {
		rows[c.Measure] = c
	}
	if _, ok := rows["pool cpu idle GPU-hours"]; ok {
		t.Error("a pool without GPUs has an idle GPU-hours row")
	}
	for measure, want := range map[string]comparison{
		"ml/training wait p95": {A: "1h10m", B: "10m", Diff: "-1h"},
		"pool gpu node-hours":  {A: "2.0", B: "2.5", Diff: "+0.5"},
		// Quota-refused time is summed over jobs: job-hours.
		"ml/training quota-refused job-hours": {A: "4.0", B: "0.0", Diff: "-4.0"},
		"pool spot node-hours":                {A: "-", B: "1.0"},
		"idle GPU-hours, all pools":           {A: "0.5", B: "1.0", Diff: "+0.5"},
		// A group none of whose jobs ran has no waits, not waits of 0s.
		"ml/batch wait p95": {A: "-", B: "5m"},
	} {
		got := rows[measure]
		got.Measure = ""
		if got != want {
			t.Errorf("%s: %+v; want %+v", measure, got, want)
		}
	}
}

// Two designs of one blueprint that differ in their provisioner are
// named by it; two blueprints by their names, Karpenter said where it
// provisions.
func TestDesignsNameTheProvisioner(t *testing.T) {
	ca := &Report{Blueprint: "retail-analytics", Provisioner: "ClusterAutoscaler"}
	karp := &Report{Blueprint: "retail-analytics", Provisioner: "Karpenter"}
	if a, b := Designs(ca, karp); a != "retail-analytics (cluster-autoscaler semantics)" || b != "retail-analytics (Karpenter)" {
		t.Errorf("Designs: %q, %q", a, b)
	}
	other := &Report{Blueprint: "retail-gpu4", Provisioner: "ClusterAutoscaler"}
	if a, b := Designs(karp, other); a != "retail-analytics (Karpenter)" || b != "retail-gpu4" {
		t.Errorf("Designs: %q, %q", a, b)
	}
	var out strings.Builder
	if err := WriteComparison(&out, ca, karp); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "A is retail-analytics (cluster-autoscaler semantics), B is retail-analytics (Karpenter)") {
		t.Errorf("the comparison does not name the provisioners:\n%s", out.String())
	}
}
