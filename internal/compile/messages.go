package compile

import "strings"

// Fixes of the rules both the guardrails and `berth audit` check, said
// once: a refusal's message and audit's catalogue give the same remedy.
// Each is a sentence or more, as a validation's message ends with it.
const (
	FixGPULimit      = `Set resources.limits["nvidia.com/gpu"] on the container to the number of GPUs it uses.`
	FixGPUWithoutGPU = `Request the GPU with resources.limits["nvidia.com/gpu"], or remove the toleration and node selector.`
	FixSystemPool    = "Remove the toleration (a toleration with no key tolerates every taint); run add-ons in kube-system or a system namespace."
	FixGlobalDefault = "Make the lowest class the global default, or none."
)

// part is a piece of what a validation's message says is wrong: text, or
// a CEL expression that gives a string.
type part struct {
	text string
	// cel, when set, is the part; text is then empty.
	cel string
}

func text(s string) part   { return part{text: s} }
func cel(expr string) part { return part{cel: expr} }

// messageExpression is a validation's CEL message, "RULE: what. Fix:
// fix", made from the rule's ID, what is wrong (without a final period)
// and its fix (plain text). Every validation's message is made here, so
// each names its rule and its fix the same way. Adjacent text is one
// literal.
func messageExpression(id string, what []part, fix string) string {
	parts := append(append([]part{text(id + ": ")}, what...), text(". Fix: "+fix))
	var out []string
	var pending strings.Builder
	for _, p := range parts {
		if p.cel == "" {
			pending.WriteString(p.text)
			continue
		}
		if pending.Len() > 0 {
			out = append(out, lit(pending.String()))
			pending.Reset()
		}
		out = append(out, p.cel)
	}
	if pending.Len() > 0 {
		out = append(out, lit(pending.String()))
	}
	return strings.Join(out, " + ")
}
