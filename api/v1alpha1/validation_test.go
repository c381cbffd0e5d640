package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Validate says what is wrong, where and what to do as separate fields:
// the path as Field, a Message that holds no fix, the Fix, and Warning
// set on warnings only.
func TestValidateKeepsFixApart(t *testing.T) {
	bp := &Blueprint{
		APIVersion: "berth.io/v1",
		Kind:       Kind,
		Metadata:   Metadata{Name: "t"},
		Spec: Spec{
			Pools: []Pool{
				{Name: "system", Mode: ModeSystem, Count: ptr(int32(1)), Machine: Machine{CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi")},
					Taints: []Taint{MustParseTaint("CriticalAddonsOnly=true:NoSchedule"), {Key: "gpu", Effect: "NoSchedual"}}},
				{Name: "gpu", Count: ptr(int32(1)), Machine: Machine{CPU: resource.MustParse("8"), Memory: resource.MustParse("32Gi"), GPU: &GPU{Count: 1, Product: "NVIDIA-L4"}}},
			},
			Classes:     []Class{{Name: "batch", Pools: []string{"gpu", "cpu"}}},
			Provisioner: "karpenter",
		},
	}
	SetDefaults(bp)
	errs, warnings := Validate(bp)

	type place struct{ Field, Message, Fix string }
	var gotErrs, gotWarnings []place
	for _, p := range errs {
		if p.Warning {
			t.Errorf("error %q is marked as a warning", p)
		}
		gotErrs = append(gotErrs, place{p.Field, p.Message, p.Fix})
	}
	for _, p := range warnings {
		if !p.Warning {
			t.Errorf("warning %q is not marked as one", p)
		}
		gotWarnings = append(gotWarnings, place{p.Field, p.Message, p.Fix})
	}
	for _, p := range append(errs, warnings...) {
		if strings.Contains(p.Message, "fix") || !p.Object.IsZero() || p.File != "" {
			t.Errorf("problem %#v: a message with its fix in it, or a place other than the field", p)
		}
	}
	wantErrs := []place{
		{"apiVersion", "must be berth.io/v1alpha1", "set apiVersion: berth.io/v1alpha1"},
		{"spec.pools[0].taints[1]", `effect "NoSchedual" is not one of NoSchedule, PreferNoSchedule, NoExecute`, `did you mean "NoSchedule"?`},
		{"spec.classes[0].pools[1]", `no pool is named "cpu"`, "use one of gpu, system"},
		{"spec.provisioner", `"karpenter" is not one of ClusterAutoscaler, Karpenter`, `did you mean "Karpenter"?`},
	}
	if diff := cmp.Diff(wantErrs, gotErrs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	wantWarnings := []place{
		{"spec.pools[1].taints", "a GPU pool without taints takes any pod, and the guardrails can keep pods off it only when they select it", `add a taint such as "gpu=true:NoSchedule"`},
	}
	if diff := cmp.Diff(wantWarnings, gotWarnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
