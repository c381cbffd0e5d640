package compile

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"berth.io/berth/internal/blueprint"
)

// A class that runs on a spot pool gives its Jobs and CronJobs the
// DisruptionTarget Ignore rule, first, only with restartPolicy Never and
// (for Jobs, whose policy is immutable) only on CREATE; a class on
// on-demand pools, and the other kinds, get none.
func TestDisruptionRuleForSpotClasses(t *testing.T) {
	bp, _, err := blueprint.Parse("b.yaml", []byte(`
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: b}
spec:
  pools:
  - {name: sys, mode: System, machine: {cpu: 2, memory: 4Gi}, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: gpu, machine: {cpu: 8, memory: 32Gi, gpu: {count: 4, product: NVIDIA-A100}}, taints: ["gpu=true:NoSchedule"]}
  - {name: spot-gpu, capacity: Spot, machine: {cpu: 8, memory: 32Gi, gpu: {count: 4, product: NVIDIA-A100}}, taints: ["gpu=true:NoSchedule", "berth.io/capacity=spot:NoSchedule"]}
  - {name: cpu, machine: {cpu: 8, memory: 32Gi}}
  classes:
  - {name: training, priority: low, preemption: Never, pools: [spot-gpu, gpu]}
  - {name: batch, pools: [gpu, cpu]}
`))
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]*admissionv1.MutatingAdmissionPolicy{}
	for _, o := range Objects(bp) {
		if p, ok := o.(*admissionv1.MutatingAdmissionPolicy); ok {
			policies[p.Name] = p
		}
	}
	const rule = `value: Object.spec.podFailurePolicy.rules{action: "Ignore", onPodConditions: [Object.spec.podFailurePolicy.rules.onPodConditions{type: "DisruptionTarget", status: "True"}]}`
	for _, tc := range []struct {
		policy, job, path, rule string
		createOnly              bool
	}{
		{"berth-class-jobs", "object.spec", "/spec/podFailurePolicy", rule, true},
		{"berth-class-cronjobs", "object.spec.jobTemplate.spec", "/spec/jobTemplate/spec/podFailurePolicy", strings.ReplaceAll(rule, "Object.spec.", "Object.spec.jobTemplate.spec."), false},
	} {
		p := policies[tc.policy]
		if p == nil {
			t.Fatalf("no policy %s", tc.policy)
		}
		if len(p.Spec.Mutations) != 1 || p.Spec.Mutations[0].JSONPatch == nil {
			t.Fatalf("%s: want one JSON patch, got %+v", tc.policy, p.Spec.Mutations)
		}
		patch := p.Spec.Mutations[0].JSONPatch.Expression
		for _, w := range []string{
			tc.rule,
			`path: "` + tc.path + `/rules/0"`, // first: the first matching rule decides
			`path: "` + tc.path + `/rules", value: []`,
			`path: "` + strings.TrimSuffix(tc.path, "/podFailurePolicy") + `/podReplacementPolicy", value: "Failed"`,
			`restartPolicy != "Never"`,
			`r.onPodConditions.exists(c, c.type == "DisruptionTarget")`,
			`.rules) >= 20`,
		} {
			if !strings.Contains(patch, w) {
				t.Errorf("%s's patch lacks %q", tc.policy, w)
			}
		}
		if got := strings.Contains(patch, `request.operation != "CREATE"`); got != tc.createOnly {
			t.Errorf("%s: patch on CREATE only = %v, want %v", tc.policy, got, tc.createOnly)
		}
		// Only training (spot-gpu) adds the rule; batch's pools are on demand.
		if n := strings.Count(patch, "DisruptionTarget\", status"); n != 1 {
			t.Errorf("%s: %d classes add the rule, want 1 (training)", tc.policy, n)
		}
		// Training's spot pool is a GPU pool: CPU pods of the class, which
		// go to its pools without GPUs (none), get no rule.
		if !strings.Contains(patch, `!variables.asksGPU ? [] : ((!has(`+tc.job+`.podFailurePolicy)`) {
			t.Errorf("%s: the rule is not limited to GPU pods", tc.policy)
		}
	}
	for _, name := range []string{"berth-class-pods", "berth-class-deployments", "berth-class-statefulsets"} {
		if strings.Contains(policies[name].Spec.Mutations[0].JSONPatch.Expression, "podFailurePolicy") {
			t.Errorf("%s adds a podFailurePolicy", name)
		}
	}
}
