// Package audit checks a cluster, or a set of manifests, against berth's
// design: node pools split by workload, GPU limits and quotas, priorities,
// disruption budgets, zone spread and model artifacts kept out of images.
//
// Audit never needs a blueprint. It reads what is there (an Inventory) and
// reports Findings, each naming the rule, the object, the field, what is
// wrong and the fix. With a blueprint it also reports drift.
package audit

import "berth.io/berth/internal/problem"

// Severity says whether a finding fails the audit.
type Severity string

const (
	// Error findings break the design: something will be refused, be
	// starved, or hold GPUs it does not use. `berth audit` exits 1.
	Error Severity = "error"
	// Warning findings weaken the design but work.
	Warning Severity = "warning"
)

// severityRank orders findings: errors first.
func severityRank(s Severity) int {
	if s == Error {
		return 0
	}
	return 1
}

// Rule is one check of the catalogue.
type Rule struct {
	// ID is stable across releases: "berth/gpu-limit".
	ID       string
	Severity Severity
	// Title is what the rule catches, in one line.
	Title string
	// Why is what goes wrong when the rule is broken.
	Why string
	// Fix is the general remedy; each finding carries its own, more
	// specific, fix.
	Fix string
}

// Object names a Kubernetes object, as a problem does.
type Object = problem.Object

// Finding is one broken rule on one object: a problem under a rule of the
// catalogue. Its Object is never zero; its Field is the path of the field
// at fault, as kubectl explain writes it
// ("spec.template.spec.containers[0].resources.limits"), empty when the
// object as a whole is at fault (a missing LimitRange); its File and Line
// say where the object, or the field when it can be found, was read from,
// empty for a live cluster. Severity, not the problem's Warning (always
// false), says whether it fails the audit.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	problem.Problem
}

// Report is the outcome of one audit.
type Report struct {
	// Findings are sorted by severity (errors first), then by file and
	// line, then by object and rule.
	Findings []Finding `json:"findings"`
	// Objects counts the objects checked, by kind.
	Objects map[string]int `json:"objects"`
	// Source is what was audited: the files, or the cluster's context.
	Source string `json:"source"`
	// Unread are the kinds a cluster did not let audit list, so that the
	// rules on them were not checked: "nodes (forbidden)".
	Unread []string `json:"unread,omitempty"`
	// Suppressed counts the findings left out by --ignore or by an
	// object's audit.berth.io/ignore annotation.
	Suppressed int `json:"suppressed,omitempty"`
}

// Errors counts the error findings; any makes the audit fail.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Error {
			n++
		}
	}
	return n
}
