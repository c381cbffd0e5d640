package rehearse

import (
	"testing"
	"time"
)

// Two designs side by side: a measure both have gets its difference, one
// only a design has shows "-" on the other side and no difference.
func TestCompareSideBySide(t *testing.T) {
	a := &Report{
		Groups: []GroupResult{{Team: "ml", Class: "training", WaitP95: Duration(70 * time.Minute)}},
		Pools:  []PoolResult{{Name: "gpu", NodeHours: 2, GPUHoursIdle: 0.5}},
	}
	b := &Report{
		Groups: []GroupResult{{Team: "ml", Class: "training", WaitP95: Duration(10 * time.Minute)}},
		Pools:  []PoolResult{{Name: "gpu", NodeHours: 2.5, GPUHoursIdle: 1}, {Name: "spot", NodeHours: 1}},
	}
	rows := map[string]comparison{}
	for _, c := range compare(a, b) {
		rows[c.Measure] = c
	}
	for measure, want := range map[string]comparison{
		"ml/training wait p95":      {A: "1h10m", B: "10m", Diff: "-1h"},
		"pool gpu node-hours":       {A: "2.0", B: "2.5", Diff: "+0.5"},
		"pool spot node-hours":      {A: "-", B: "1.0"},
		"idle GPU-hours, all pools": {A: "0.5", B: "1.0", Diff: "+0.5"},
	} {
		got := rows[measure]
		got.Measure = ""
		if got != want {
			t.Errorf("%s: %+v; want %+v", measure, got, want)
		}
	}
}
