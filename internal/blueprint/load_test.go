package blueprint

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

const valid = `apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata:
  name: t
spec:
  zones: [zone-1, zone-2]
  pools:
  - name: system
    mode: System
    machine: {cpu: 4, memory: 16Gi}
    count: 2
    taints: ["CriticalAddonsOnly=true:NoSchedule"]
  - name: gpu
    machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}
    autoscale: {min: 0, max: 2}
    taints: ["gpu=true:NoSchedule"]
  teams:
  - name: team-a
    quota: {gpu: 2}
  classes:
  - name: training
    pools: [gpu]
`

// edit returns valid with old replaced by new, failing if old is absent.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(valid, old) {
		t.Fatalf("test fixture lacks %q", old)
	}
	return strings.Replace(valid, old, new, 1)
}

type want struct {
	line    int
	field   string
	message string // substring
	warning bool
}

func TestParseReportsEachProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  func(t *testing.T) string
		want []want
	}{
		{"invalid YAML", func(t *testing.T) string { return edit(t, "  name: t\n", "  name: [t\n") },
			[]want{{line: 3, message: "invalid YAML"}}},
		{"second document", func(t *testing.T) string { return valid + "---\nkind: Other\n" },
			[]want{{line: 23, message: "holds one document"}}},
		{"empty file", func(*testing.T) string { return "" }, []want{{message: "the file is empty"}}},
		{"unknown field", func(t *testing.T) string { return edit(t, "    count: 2\n", "    cout: 2\n") },
			[]want{{line: 11, field: "spec.pools[0].cout", message: `unknown field "cout"`}}},
		{"duplicate key", func(t *testing.T) string { return edit(t, "    count: 2\n", "    count: 2\n    count: 3\n") },
			[]want{{line: 12, field: "spec.pools[0].count", message: "appears twice"}}},
		{"string for a count", func(t *testing.T) string { return edit(t, "    count: 2\n", "    count: two\n") },
			[]want{{line: 11, field: "spec.pools[0].count", message: "expected a whole number"}}},
		{"list for a map", func(t *testing.T) string { return edit(t, "machine: {cpu: 4, memory: 16Gi}", "machine: [4, 16Gi]") },
			[]want{{line: 10, field: "spec.pools[0].machine", message: "expected a map"}}},
		{"unparsable quantity", func(t *testing.T) string { return edit(t, "cpu: 4,", `cpu: "4 cores",`) },
			[]want{{line: 10, field: "spec.pools[0].machine.cpu", message: "is not a quantity"}}},
		{"negative quantity", func(t *testing.T) string { return edit(t, "cpu: 4,", "cpu: -4,") },
			[]want{{line: 10, field: "spec.pools[0].machine.cpu", message: "must be greater than zero"}}},
		{"duplicate pool", func(t *testing.T) string { return edit(t, "  - name: gpu\n", "  - name: system\n") },
			[]want{{line: 13, field: "spec.pools[1].name", message: `"system" appears more than once`}, {line: 22, field: "spec.classes[0].pools[0]", message: `no pool is named "gpu"`}}},
		{"no System pool", func(t *testing.T) string { return edit(t, "    mode: System\n", "") },
			[]want{{line: 7, field: "spec.pools", message: "no pool has mode: System"}}},
		{"Windows System pool", func(t *testing.T) string { return edit(t, "    mode: System\n", "    mode: System\n    os: Windows\n") },
			[]want{{line: 10, field: "spec.pools[0].os", message: "must run Linux"}}},
		{"System pool at zero", func(t *testing.T) string { return edit(t, "    count: 2\n", "    count: 0\n") },
			[]want{{line: 11, field: "spec.pools[0].count", message: "at least one node"}}},
		{"System pool scaling to zero", func(t *testing.T) string {
			return edit(t, "    count: 2\n", "    autoscale: {min: 0, max: 3}\n")
		}, []want{{line: 11, field: "spec.pools[0].autoscale.min", message: "at least one node"}}},
		{"bad taint effect", func(t *testing.T) string { return edit(t, "gpu=true:NoSchedule", "gpu=true:NoSchedual") },
			[]want{{line: 16, field: "spec.pools[1].taints[0]", message: `effect "NoSchedual" is not one of NoSchedule, PreferNoSchedule, NoExecute`}}},
		{"bad taint key", func(t *testing.T) string { return edit(t, "gpu=true:NoSchedule", "g pu=true:NoSchedule") },
			[]want{{line: 16, field: "spec.pools[1].taints[0]", message: `taint key "g pu" is invalid`}}},
		{"bad taint value", func(t *testing.T) string { return edit(t, "gpu=true:NoSchedule", "gpu=tr ue:NoSchedule") },
			[]want{{line: 16, field: "spec.pools[1].taints[0]", message: `taint value "tr ue" is invalid`}}},
		{"taint without effect", func(t *testing.T) string { return edit(t, "gpu=true:NoSchedule", "gpu=true") },
			[]want{{line: 16, field: "spec.pools[1].taints[0]", message: "is not KEY[=VALUE]:EFFECT"}}},
		{"count and autoscale", func(t *testing.T) string {
			return edit(t, "    autoscale: {min: 0, max: 2}\n", "    count: 1\n    autoscale: {min: 0, max: 2}\n")
		}, []want{{line: 15, field: "spec.pools[1].count", message: "cannot both be set"}}},
		{"min above max", func(t *testing.T) string { return edit(t, "{min: 0, max: 2}", "{min: 3, max: 2}") },
			[]want{{line: 15, field: "spec.pools[1].autoscale.min", message: "min is greater than max"}}},
		{"class naming an unknown pool", func(t *testing.T) string { return edit(t, "pools: [gpu]", "pools: [gpus]") },
			[]want{{line: 22, field: "spec.classes[0].pools[0]", message: `no pool is named "gpus"`}}},
		{"GPU quota without GPU pools", func(t *testing.T) string {
			return edit(t, ", gpu: {count: 1, product: NVIDIA-L4}", "")
		}, []want{{line: 19, field: "spec.teams[0].quota.gpu", message: "no pool provides GPUs"}}},
		{"zone not declared", func(t *testing.T) string { return edit(t, "    count: 2\n", "    count: 2\n    zones: [zone-9]\n") },
			[]want{{line: 12, field: "spec.pools[0].zones[0]", message: `zone "zone-9" is not declared`}}},
		{"names that are not DNS labels", func(t *testing.T) string {
			s := edit(t, "  name: t\n", "  name: T_1\n")
			s = strings.Replace(s, "- name: gpu\n", "- name: GPU\n", 1)
			s = strings.Replace(s, "pools: [gpu]", "pools: [GPU]", 1)
			s = strings.Replace(s, "- name: team-a", "- name: team_a", 1)
			return strings.Replace(s, "- name: training", "- name: Training", 1)
		}, []want{
			{line: 4, field: "metadata.name", message: "is not a DNS-1123 label"},
			{line: 13, field: "spec.pools[1].name", message: "is not a DNS-1123 label"},
			{line: 18, field: "spec.teams[0].name", message: "is not a DNS-1123 label"},
			{line: 18, field: "spec.teams[0].namespaces[0]", message: "is not a DNS-1123 label"},
			{line: 21, field: "spec.classes[0].name", message: "is not a DNS-1123 label"},
		}},
		{"wrong apiVersion and kind", func(t *testing.T) string {
			return strings.Replace(edit(t, "berth.io/v1alpha1", "berth.io/v1"), "kind: Blueprint", "kind: Cluster", 1)
		}, []want{{line: 1, field: "apiVersion", message: "must be berth.io/v1alpha1"}, {line: 2, field: "kind", message: "must be Blueprint"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bp, _, err := Parse("bp.yaml", []byte(tc.doc(t)))
			var bad *Error
			if !errors.As(err, &bad) {
				t.Fatalf("Parse = %v, %v; want *Error", bp, err)
			}
			var got []want
			for _, p := range bad.Problems {
				if p.File != "bp.yaml" {
					t.Errorf("problem %v names file %q", p, p.File)
				}
				if p.Fix == "" && !strings.Contains(p.Message, "DNS-1123") {
					t.Errorf("problem %q has no fix", p)
				}
				got = append(got, want{line: p.Line, field: p.Field, message: p.Message, warning: p.Warning})
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(w, g want) bool {
				return w.line == g.line && w.field == g.field && w.warning == g.warning &&
					(strings.Contains(g.message, w.message) || strings.Contains(w.message, g.message))
			}), cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWarnsButAccepts(t *testing.T) {
	bp, warnings, err := Parse("bp.yaml", []byte(strings.Replace(valid, "quota: {gpu: 2}", "quota: {gpu: 8}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if bp == nil || len(warnings) != 1 || warnings[0].Field != "spec.teams[0].quota.gpu" || !warnings[0].Warning || warnings[0].Line != 19 {
		t.Fatalf("warnings = %v", warnings)
	}
	if !strings.Contains(warnings[0].String(), "bp.yaml:19: warning: spec.teams[0].quota.gpu: the pools can never hold more than 2 GPUs") {
		t.Errorf("rendered warning = %q", warnings[0].String())
	}
}

func TestTemplatesAreValid(t *testing.T) {
	for _, name := range TemplateNames() {
		data, err := Template(name)
		if err != nil {
			t.Fatal(err)
		}
		_, warnings, err := Parse(name, data)
		if err != nil || len(warnings) > 0 {
			t.Errorf("template %s: %v %v", name, err, warnings)
		}
	}
	bp, err := LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	type pool struct {
		name, mode, capacity string
		min, max             int32
		gpus                 string
		taints               []string
	}
	var got []pool
	for _, p := range bp.Spec.Pools {
		min := p.InitialSize()
		gpus := ""
		if p.Machine.GPU != nil {
			gpus = p.Machine.GPU.Product
		}
		got = append(got, pool{p.Name, string(p.Mode), string(p.Capacity), min, p.MaxSize(), gpus, p.Taints})
	}
	want := []pool{
		{"system", "System", "OnDemand", 2, 2, "", []string{"CriticalAddonsOnly=true:NoSchedule"}},
		{"cpu", "User", "OnDemand", 4, 8, "", nil},
		{"gpu", "User", "OnDemand", 0, 2, "NVIDIA-L4", []string{"gpu=true:NoSchedule"}},
		{"spot-gpu", "User", "Spot", 0, 4, "NVIDIA-L4", []string{"gpu=true:NoSchedule", "berth.io/capacity=spot:NoSchedule"}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(pool{})); diff != "" {
		t.Errorf("retail pools (-want +got):\n%s", diff)
	}
	if len(bp.Spec.Teams) != 2 || len(bp.Spec.Classes) != 3 {
		t.Errorf("retail has %d teams and %d classes, want 2 and 3", len(bp.Spec.Teams), len(bp.Spec.Classes))
	}
}

// The rendered error for a file with many problems is what users read;
// it is pinned by a golden file (go test -update rewrites it).
func TestBrokenGolden(t *testing.T) {
	_, _, err := Load("testdata/broken.yaml")
	if err == nil {
		t.Fatal("testdata/broken.yaml loaded without error")
	}
	got := err.Error() + "\n"
	if *update {
		os.WriteFile("testdata/broken.golden", []byte(got), 0o644)
	}
	want, rerr := os.ReadFile("testdata/broken.golden")
	if rerr != nil {
		t.Fatal(rerr)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("rendered problems (-want +got):\n%s", diff)
	}
}
