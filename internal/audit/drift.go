package audit

import (
	"fmt"
	"strings"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/problem"
)

// Drift turns a plan of the blueprint against the cluster into findings:
// every object or pool apply would change is one.
func Drift(plan *apply.Plan, blueprintFile string) []Finding {
	r, _ := RuleByID(v1alpha1.RuleDrift)
	fix := fmt.Sprintf("run `berth apply -f %s`, or change the blueprint to match the cluster", blueprintFile)
	var out []Finding
	for _, c := range plan.Objects {
		f := Finding{Rule: v1alpha1.RuleDrift, Severity: r.Severity, Problem: problem.Problem{Object: Object{Kind: c.Kind.Kind, Namespace: c.Namespace, Name: c.Name}, Fix: fix}}
		switch c.Action {
		case apply.Create:
			f.Message = fmt.Sprintf("blueprint %s has this object; the cluster does not", plan.Blueprint)
		case apply.Conflict:
			f.Message = "another field manager owns fields the blueprint sets: " + c.Note
			f.Fix = fmt.Sprintf("hand the fields back to berth with `berth apply -f %s --force-conflicts`, or stop the other manager setting them", blueprintFile)
		default:
			var fields []string
			for _, fc := range c.Fields {
				fields = append(fields, fmt.Sprintf("%s: %s → %s", fc.Path, orNone(fc.From), orNone(fc.To)))
			}
			if len(c.Fields) > 0 {
				f.Field = c.Fields[0].Path
			}
			f.Message = fmt.Sprintf("differs from blueprint %s (%s): %s", plan.Blueprint, c.Action, strings.Join(fields, "; "))
			if c.Note != "" {
				f.Message += " (" + c.Note + ")"
			}
		}
		out = append(out, f)
	}
	for _, c := range plan.Pools {
		msg := fmt.Sprintf("pool %s differs from blueprint %s (%s, %d → %d nodes)", c.Pool, plan.Blueprint, c.Action, c.From, c.To)
		if len(c.Fields) > 0 {
			msg += ": " + strings.Join(c.Fields, "; ")
		}
		out = append(out, Finding{Rule: v1alpha1.RuleDrift, Severity: r.Severity, Problem: problem.Problem{Object: Object{Kind: "Pool", Name: c.Pool}, Message: msg, Fix: fix}})
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
