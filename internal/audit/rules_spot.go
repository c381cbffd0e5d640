package audit

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

// checkSpotDisruption: a Job or CronJob that can run on a spot pool
// (tolerates a spot pool's taint or selects spot nodes) ignores pods
// failed by disruption in its podFailurePolicy, so that interruptions do
// not use up its backoffLimit (berth/spot-disruption-policy).
//
// A warning, as berth/inference-pdb is: nothing is refused or broken by
// itself, the Job survives backoffLimit interruptions (6 by default), and
// on a cluster with berth's guardrails class mutation adds the rule to
// the Jobs of spot classes when they are created.
//
// The rule saves the Job, not the work: the checkpoint contract the
// training code must meet is that on SIGTERM it writes a checkpoint
// within the notice (30 s on Azure and Google, 2 min on AWS; `berth spot
// interrupt --notice` rehearses it), to durable storage (object storage
// or a PVC, not the pod's emptyDir, which goes with the node), and that
// at start it resumes from the latest checkpoint. Otherwise the Job's
// replacement pod starts from zero (berth/spot-checkpoint reports
// training on spot with no durable volume).
func (v *view) checkSpotDisruption(w *workload) {
	if w.job == nil || !v.onSpot(w) || ignoresDisruption(w.job.PodFailurePolicy) {
		return
	}
	if w.spec.RestartPolicy == corev1.RestartPolicyOnFailure {
		v.add(v1alpha1.RuleSpotDisruption, w.obj, w.path+".restartPolicy",
			"runs on a spot pool with restartPolicy OnFailure, which Kubernetes allows no podFailurePolicy, so it cannot be told to ignore interruptions: each one counts against its backoffLimit (berth's class mutation leaves such Jobs as they are)",
			"set restartPolicy: Never and add podFailurePolicy.rules[0] = {action: Ignore, onPodConditions: [{type: DisruptionTarget}]}; the training must checkpoint on SIGTERM to durable storage and resume from the latest checkpoint")
		return
	}
	v.add(v1alpha1.RuleSpotDisruption, w.obj, w.jobPath+".podFailurePolicy",
		"runs on a spot pool, but no podFailurePolicy rule ignores pods failed with DisruptionTarget, so each interruption counts against its backoffLimit",
		"add podFailurePolicy.rules[0] = {action: Ignore, onPodConditions: [{type: DisruptionTarget}]} (berth adds it to Jobs of a class with spot pools); the training must checkpoint on SIGTERM to durable storage and resume from the latest checkpoint")
}

// ignoresDisruption reports whether a rule ignores pods that failed with
// the DisruptionTarget condition.
func ignoresDisruption(p *batchv1.PodFailurePolicy) bool {
	if p == nil {
		return false
	}
	for _, r := range p.Rules {
		if r.Action != batchv1.PodFailurePolicyActionIgnore {
			continue
		}
		for _, c := range r.OnPodConditions {
			if c.Type == corev1.DisruptionTarget && (c.Status == "" || c.Status == corev1.ConditionTrue) {
				return true
			}
		}
	}
	return false
}
