package blueprint

import (
	"testing"

	"berth.io/berth/api/v1alpha1"
	"github.com/google/go-cmp/cmp"
)

func TestTemplateNames(t *testing.T) {
	if diff := cmp.Diff([]string{"minimal", "retail"}, TemplateNames()); diff != "" {
		t.Errorf("TemplateNames (-want +got):\n%s", diff)
	}
	if _, err := Template("nope"); err == nil {
		t.Error(`Template("nope") returned no error`)
	}
	if _, err := Template(DefaultTemplate); err != nil {
		t.Errorf("the default template: %v", err)
	}
}

func TestTemplatesLoadCleanly(t *testing.T) {
	for _, name := range TemplateNames() {
		t.Run(name, func(t *testing.T) {
			data, err := Template(name)
			if err != nil {
				t.Fatal(err)
			}
			bp, warnings, err := Parse(name+".yaml", data)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Errorf("warnings: %v", warnings)
			}
			if bp.Metadata.Name == "" {
				t.Error("template has no name")
			}
		})
	}
}

// The retail template is the cluster the docs walk through; its shape is
// what the docs and the e2e tests rely on.
func TestRetailTemplateShape(t *testing.T) {
	bp, err := LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	type pool struct {
		Name, Mode, Capacity string
		Min, Max             int32
		GPU                  string
		Taints               []string
	}
	var got []pool
	for _, p := range bp.Spec.Pools {
		gpu := ""
		if g := p.Machine.GPU; g != nil {
			gpu = g.Product
		}
		got = append(got, pool{p.Name, string(p.Mode), string(p.Capacity), p.InitialSize(), p.MaxSize(), gpu, taintStrings(p.Taints)})
	}
	want := []pool{
		{"system", "System", "OnDemand", 2, 2, "", []string{"CriticalAddonsOnly=true:NoSchedule"}},
		{"cpu", "User", "OnDemand", 4, 8, "", nil},
		{"gpu", "User", "OnDemand", 0, 2, "NVIDIA-L4", []string{"gpu=true:NoSchedule"}},
		{"spot-gpu", "User", "Spot", 0, 4, "NVIDIA-L4", []string{"gpu=true:NoSchedule", "berth.io/capacity=spot:NoSchedule"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("retail pools (-want +got):\n%s", diff)
	}
	if p := bp.Spec.Pools[0]; p.Count == nil || p.Autoscale != nil {
		t.Errorf("system pool: count %v, autoscale %v; want a fixed count", p.Count, p.Autoscale)
	}
	for _, p := range bp.Spec.Pools[1:] {
		if p.Autoscale == nil {
			t.Errorf("pool %s does not autoscale", p.Name)
		}
	}

	var teams, classes []string
	for _, tm := range bp.Spec.Teams {
		teams = append(teams, tm.Name)
	}
	for _, c := range bp.Spec.Classes {
		classes = append(classes, c.Name)
	}
	if diff := cmp.Diff([]string{"team-a", "team-b"}, teams); diff != "" {
		t.Errorf("retail teams (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"inference", "training", "batch", "batch-inference"}, classes); diff != "" {
		t.Errorf("retail classes (-want +got):\n%s", diff)
	}
}

func TestLoadTemplateUnknown(t *testing.T) {
	if bp, err := LoadTemplate("nope"); err == nil || bp != nil {
		t.Errorf(`LoadTemplate("nope") = %v, %v; want an error`, bp, err)
	}
}

// taintStrings writes taints back as the blueprint spells them; nil for none.
func taintStrings(taints []v1alpha1.Taint) []string {
	var out []string
	for _, t := range taints {
		out = append(out, t.String())
	}
	return out
}
