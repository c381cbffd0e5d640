package compile

import (
	"strconv"

	"berth.io/berth/api/v1alpha1"
)

// Training that survives interruption: a Job (or a CronJob's
// jobTemplate) of a class that runs on spot pools gets a podFailurePolicy
// rule that ignores pods failed by disruption,
//
//	{action: Ignore, onPodConditions: [{type: DisruptionTarget, status: "True"}]}
//
// so that a spot node taken away (its pods evicted, preempted or
// deleted with the node: the control plane marks them DisruptionTarget)
// does not count against the Job's backoffLimit; the Job controller
// replaces the pod on new capacity. What the replacement resumes from is
// the training code's part (the checkpoint contract in
// docs/concepts/guardrails.md and in audit's
// berth/spot-disruption-policy): on SIGTERM write a checkpoint
// within the notice, to durable storage, and resume from the latest one
// at start; otherwise the replacement starts from zero.
//
// The rule goes first (at rules/0): the first rule that matches a failed
// pod decides, and a user's exit-code rule (a disrupted container exits
// 137 or 143) must not fail the Job or count it first. Rules the user
// wrote are kept; a Job that already has a rule on DisruptionTarget
// (whatever its action) is left as it is, as is one with the API's
// maximum of 20 rules.
//
// Kubernetes allows a podFailurePolicy only with restartPolicy: Never in
// the pod template and refuses the Job otherwise, so a Job with
// OnFailure is admitted unchanged (audit says it cannot be protected).
// A Job's podFailurePolicy is immutable, so Jobs get it on CREATE only.
// With a podFailurePolicy the API allows only podReplacementPolicy
// Failed (a replacement starts once the old pod is terminal), and a Job
// without one was defaulted to TerminatingOrFailed before mutation, so
// creating the policy sets Failed too.

// maxPodFailurePolicyRules is the API server's limit on a Job's rules.
const maxPodFailurePolicyRules = 20

// disruptionRule is the JSON patch list, as CEL, that gives a Job spec
// the DisruptionTarget Ignore rule, creating the policy or its rules when
// missing. Each patch value is one object: a list of objects as one value
// panics the 1.36 API server's JSON patcher.
func disruptionRule(t mutationTarget) string {
	pfp := t.job + ".podFailurePolicy"
	typ := t.jobObject + ".podFailurePolicy"
	path := t.jobPath + "/podFailurePolicy"
	rule := typ + ".rules{action: \"Ignore\", onPodConditions: [" + typ + ".rules.onPodConditions{type: \"DisruptionTarget\", status: \"True\"}]}"
	return "((!has(" + pfp + ") ? [JSONPatch{op: \"add\", path: \"" + path + "\", value: " + typ + "{}}, " +
		"JSONPatch{op: \"add\", path: \"" + t.jobPath + "/podReplacementPolicy\", value: \"Failed\"}] : []) + " +
		"(!has(" + pfp + ") || !has(" + pfp + ".rules) ? [JSONPatch{op: \"add\", path: \"" + path + "/rules\", value: []}] : []) + " +
		"[JSONPatch{op: \"add\", path: \"" + path + "/rules/0\", value: " + rule + "}])"
}

// disruptionGuard is true (add nothing) unless the object is of the class
// (is is the negation), is being created (for Jobs), restarts Never, and
// has no DisruptionTarget rule and room for one.
func disruptionGuard(t mutationTarget, is string) string {
	pfp := t.job + ".podFailurePolicy"
	rules := "has(" + pfp + ") && has(" + pfp + ".rules)"
	guard := is
	if t.jobImmutable {
		guard += " || request.operation != \"CREATE\""
	}
	return guard + " || !has(" + t.spec + ".restartPolicy) || " + t.spec + ".restartPolicy != \"Never\"" +
		" || (" + rules + " && (size(" + pfp + ".rules) >= " + strconv.Itoa(maxPodFailurePolicyRules) +
		" || " + pfp + ".rules.exists(r, has(r.onPodConditions) && r.onPodConditions.exists(c, c.type == \"DisruptionTarget\"))))"
}

// hasSpot reports whether any of pools is bought as spot.
func hasSpot(pools []*v1alpha1.Pool) bool {
	for _, p := range pools {
		if p.Capacity == v1alpha1.Spot {
			return true
		}
	}
	return false
}

// onlyIf is s when ok, else "" (nothing to add).
func onlyIf(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}
