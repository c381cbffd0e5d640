package v1alpha1

import (
	"strings"
	"testing"
)

func TestParseTaintRoundTrips(t *testing.T) {
	for _, s := range []string{"gpu=true:NoSchedule", "CriticalAddonsOnly=true:NoSchedule", "example.com/spot:NoExecute", "dedicated=ml:PreferNoSchedule"} {
		taint, err := ParseTaint(s)
		if err != nil {
			t.Fatalf("ParseTaint(%q): %v", s, err)
		}
		if got := TaintString(taint); got != s {
			t.Errorf("TaintString(ParseTaint(%q)) = %q", s, got)
		}
	}
}

func TestParseTaintExplains(t *testing.T) {
	for s, want := range map[string]string{
		"gpu=true":            "is not KEY[=VALUE]:EFFECT",
		"gpu=true:NoSchedual": `did you mean "NoSchedule"?`,
		"gpu=true:noschedule": `did you mean "NoSchedule"?`,
		"gpu=true:Sometimes":  "is not one of NoSchedule, PreferNoSchedule, NoExecute",
		"=true:NoSchedule":    `taint key "" is invalid`,
		"gpu=a b:NoSchedule":  `taint value "a b" is invalid`,
		"a:b:NoSchedule":      "is not KEY[=VALUE]:EFFECT",
	} {
		_, err := ParseTaint(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTaint(%q) = %v, want an error containing %q", s, err, want)
		}
	}
}

func TestSetDefaultsIsIdempotent(t *testing.T) {
	two := int32(2)
	bp := &Blueprint{Spec: Spec{
		Pools:   []Pool{{Name: "gpu", Machine: Machine{GPU: &GPU{Count: 1, Product: "L4"}}, Autoscale: &Autoscale{Min: 0, Max: 3}}, {Name: "sys", Count: &two}},
		Teams:   []Team{{Name: "a"}},
		Classes: []Class{{Name: "c", Pools: []string{"gpu"}}},
	}}
	SetDefaults(bp)
	p := bp.Spec.Pools[0]
	if p.Mode != ModeUser || p.OS != Linux || p.Capacity != OnDemand || p.MaxPods != 110 || p.Machine.GPU.Resource != "nvidia.com/gpu" || len(p.Zones) != 1 {
		t.Errorf("pool defaults = %+v", p)
	}
	if bp.Spec.Teams[0].Namespaces[0] != "a" || bp.Spec.Teams[0].Defaults.CPURequest.String() != "500m" {
		t.Errorf("team defaults = %+v", bp.Spec.Teams[0])
	}
	if c := bp.Spec.Classes[0]; c.Preemption != PreemptLowerPriority || c.Spread != SpreadNone {
		t.Errorf("class defaults = %+v", c)
	}
	if p.InitialSize() != 0 || p.MaxSize() != 3 || bp.Spec.Pools[1].InitialSize() != 2 || bp.Spec.Pools[1].MaxSize() != 2 {
		t.Error("InitialSize/MaxSize disagree with count and autoscale")
	}
	before := *bp.Spec.Teams[0].Defaults.CPURequest
	SetDefaults(bp)
	if len(bp.Spec.Pools[0].Zones) != 1 || bp.Spec.Teams[0].Defaults.CPURequest.Cmp(before) != 0 {
		t.Error("SetDefaults is not idempotent")
	}
}
