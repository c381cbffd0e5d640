package compile

import (
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"berth.io/berth/api/v1alpha1"
)

func TestMessageExpression(t *testing.T) {
	for _, tc := range []struct {
		what []part
		want string
	}{
		{[]part{text("a "), cel("variables.ns"), text(" b"), text(" c")}, `"berth/x: a " + variables.ns + " b c. Fix: do it."`},
		{[]part{cel("variables.ns")}, `"berth/x: " + variables.ns + ". Fix: do it."`},
		{[]part{text("plain"), text("")}, `"berth/x: plain. Fix: do it."`},
		{[]part{text(`say "hi"`)}, `"berth/x: say \"hi\". Fix: do it."`},
	} {
		if got := messageExpression("berth/x", tc.what, "do it."); got != tc.want {
			t.Errorf("messageExpression(%v)\n got: %s\nwant: %s", tc.what, got, tc.want)
		}
	}
}

// Every refusal names its rule and ends with its fix; the rules audit
// checks too end with the fix audit's catalogue gives.
func TestValidationMessagesEndWithTheirFix(t *testing.T) {
	shared := map[string]string{
		v1alpha1.RuleGPULimit:      FixGPULimit,
		v1alpha1.RuleGPUWithoutGPU: FixGPUWithoutGPU,
		v1alpha1.RuleSystemPool:    FixSystemPool,
		v1alpha1.RuleGlobalDefault: FixGlobalDefault,
	}
	seen := map[string]bool{}
	for _, o := range retail(t) {
		p, ok := o.(*admissionv1.ValidatingAdmissionPolicy)
		if !ok {
			continue
		}
		for _, v := range p.Spec.Validations {
			id, _, ok := strings.Cut(strings.TrimPrefix(v.MessageExpression, `"`), ": ")
			if !ok || !strings.HasPrefix(id, "berth/") {
				t.Errorf("%s: message names no rule: %s", p.Name, v.MessageExpression)
				continue
			}
			_, fix, ok := strings.Cut(v.MessageExpression, ". Fix: ")
			if !ok || !strings.HasSuffix(fix, `."`) || strings.Contains(fix, `" + `) {
				t.Errorf("%s: %s's message does not end with a plain fix: %s", p.Name, id, v.MessageExpression)
				continue
			}
			if want, ok := shared[id]; ok {
				seen[id] = true
				if q := strconv.Quote(want); !strings.HasPrefix(`"`+fix, q[:len(q)-1]) {
					t.Errorf("%s: %s's fix is not the one audit gives:\n got: %s\nwant: %s", p.Name, id, fix, want)
				}
			}
		}
	}
	for id := range shared {
		if !seen[id] {
			t.Errorf("no policy checks %s", id)
		}
	}
}
