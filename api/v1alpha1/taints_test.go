package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestParseTaint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want corev1.Taint
	}{
		{"gpu=true:NoSchedule", corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		{"CriticalAddonsOnly=true:NoSchedule", corev1.Taint{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		{"example.com/spot:NoExecute", corev1.Taint{Key: "example.com/spot", Effect: corev1.TaintEffectNoExecute}},
		{"dedicated=ml:PreferNoSchedule", corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectPreferNoSchedule}},
		{"berth.io/capacity=spot:NoSchedule", corev1.Taint{Key: "berth.io/capacity", Value: "spot", Effect: corev1.TaintEffectNoSchedule}},
		{"a=b.c-d_e:NoSchedule", corev1.Taint{Key: "a", Value: "b.c-d_e", Effect: corev1.TaintEffectNoSchedule}},
	} {
		got, err := ParseTaint(tc.in)
		if err != nil {
			t.Errorf("ParseTaint(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, corev1.Taint(got)); diff != "" {
			t.Errorf("ParseTaint(%q) (-want +got):\n%s", tc.in, diff)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("TaintString(ParseTaint(%q)) = %q", tc.in, s)
		}
	}
}

func TestTaintStringRoundTrips(t *testing.T) {
	for _, taint := range []corev1.Taint{
		{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/gpu", Effect: corev1.TaintEffectNoExecute},
		{Key: "k", Value: "v", Effect: corev1.TaintEffectPreferNoSchedule},
	} {
		got, err := ParseTaint(TaintString(taint))
		if err != nil {
			t.Errorf("ParseTaint(TaintString(%+v)): %v", taint, err)
			continue
		}
		if diff := cmp.Diff(taint, corev1.Taint(got)); diff != "" {
			t.Errorf("round trip of %+v (-want +got):\n%s", taint, diff)
		}
	}
	// An empty value is the same taint as no value, and is written without one.
	taint, err := ParseTaint("gpu=:NoSchedule")
	if err != nil {
		t.Fatal(err)
	}
	if got := taint.String(); got != "gpu:NoSchedule" {
		t.Errorf("TaintString(ParseTaint(%q)) = %q, want %q", "gpu=:NoSchedule", got, "gpu:NoSchedule")
	}
}

func TestParseTaintExplains(t *testing.T) {
	const notTaint = "is not KEY[=VALUE]:EFFECT\nfix: write it like \"gpu=true:NoSchedule\""
	const effects = "is not one of NoSchedule, PreferNoSchedule, NoExecute\nfix: "
	for _, tc := range []struct {
		in   string
		want string // the whole error, or its start when it ends in "..."
	}{
		{"gpu=true", `taint "gpu=true" ` + notTaint},
		{"CriticalAddonsOnly", `taint "CriticalAddonsOnly" ` + notTaint},
		{"a:b:NoSchedule", `taint "a:b:NoSchedule" ` + notTaint},
		{"", `taint "" ` + notTaint},
		{"gpu=true:NoSchedual", `effect "NoSchedual" ` + effects + `did you mean "NoSchedule"?`},
		{"gpu=true:noschedule", `effect "noschedule" ` + effects + `did you mean "NoSchedule"?`},
		{"gpu=true:NOEXECUTE", `effect "NOEXECUTE" ` + effects + `did you mean "NoExecute"?`},
		{"gpu=true:PreferNoSchedul", `effect "PreferNoSchedul" ` + effects + `did you mean "PreferNoSchedule"?`},
		{"gpu=true:Sometimes", `effect "Sometimes" ` + effects + "use one of them"},
		{"gpu=true:", `effect "" ` + effects + "use one of them"},
		{"=true:NoSchedule", `taint key "" is invalid: ...`},
		{"g pu=true:NoSchedule", `taint key "g pu" is invalid: ...`},
		{"-gpu:NoSchedule", `taint key "-gpu" is invalid: ...`},
		{"gpu=a b:NoSchedule", `taint value "a b" is invalid: ...`},
		{"gpu=" + strings.Repeat("v", 64) + ":NoSchedule", `taint value "` + strings.Repeat("v", 64) + `" is invalid: ...`},
	} {
		_, err := ParseTaint(tc.in)
		if err == nil {
			t.Errorf("ParseTaint(%q) returned no error", tc.in)
			continue
		}
		got := err.Error()
		if prefix, ok := strings.CutSuffix(tc.want, "..."); ok {
			if !strings.HasPrefix(got, prefix) || !strings.Contains(got, "\nfix: ") {
				t.Errorf("ParseTaint(%q) = %q, want %q... with a fix", tc.in, got, prefix)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("ParseTaint(%q) error\n got: %q\nwant: %q", tc.in, got, tc.want)
		}
	}
}
