package compile

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"berth.io/berth/api/v1alpha1"
)

// GPU limits: a container that asks for GPUs in resources.requests
// without a limit is refused by the API server's own validation ("Limit
// must be set for non overcommitable resources"), which runs after the
// mutating policies and before the validating ones, so a validating rule
// of berth's could never see it. The berth-gpu-limits-* policies make it
// reachable: they complete the limit from the request, which makes the
// object valid, and mark it with AnnotationGPULimitMissing, on which the
// berth/gpu-limit rule refuses it with berth's message and fix. Under
// guardrails Warn or Audit the object is admitted with the limit it was
// missing, which is the one reading of a GPU request.

// gpuLimitSlots is how many containers (and init containers) of one pod
// the policy completes. Past them the API server's own message stands:
// the object is refused either way.
const gpuLimitSlots, gpuLimitInitSlots = 8, 4

func gpuLimitPolicies(bp *v1alpha1.Blueprint) []Object {
	if bp.Spec.Guardrails == v1alpha1.GuardrailsOff {
		return nil
	}
	var out []Object
	for _, t := range mutationTargets {
		p := gpuLimitPolicy(bp, t)
		out = append(out, p, &admissionv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "MutatingAdmissionPolicyBinding"),
			ObjectMeta: meta(bp, "", p.Name, nil),
			Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p.Name},
		})
	}
	return out
}

func gpuLimitPolicy(bp *v1alpha1.Blueprint, t mutationTarget) *admissionv1.MutatingAdmissionPolicy {
	gpus := celList(gpuResources(bp))
	missing := func(c string) string {
		return "(has(" + c + ".resources) && has(" + c + ".resources.requests) && " + gpus + ".exists(r, r in " + c + ".resources.requests && !(has(" + c + ".resources.limits) && r in " + c + ".resources.limits)))"
	}
	containers := t.spec + ".containers"
	inits := "(has(" + t.spec + ".initContainers) ? " + t.spec + ".initContainers : [])"
	var parts []string
	slot := func(list, path string, i int) {
		c := fmt.Sprintf("%s[%d]", list, i)
		p := fmt.Sprintf("%s/%s/%d/resources/limits", t.path, path, i)
		parts = append(parts, fmt.Sprintf("(size(%s) > %d && %s ? ((has(%s.resources.limits) ? [] : [JSONPatch{op: \"add\", path: %q, value: {}}]) + "+
			"%s.filter(r, r in %s.resources.requests && !(has(%s.resources.limits) && r in %s.resources.limits)).map(r, JSONPatch{op: \"add\", path: %q + jsonpatch.escapeKey(r), value: %s.resources.requests[r]})) : [])",
			list, i, missing(c), c, p, gpus, c, c, c, p+"/", c))
	}
	for i := range gpuLimitSlots {
		slot(containers, "containers", i)
	}
	for i := range gpuLimitInitSlots {
		slot(inits, "initContainers", i)
	}
	annotations := strings.TrimSuffix(t.labels, "labels") + "annotations"
	annotationsPath := strings.TrimSuffix(t.labelsPath, "labels") + "annotations"
	names := "(" + containers + " + " + inits + ").filter(c, " + missing("c") + ").map(c, c.name).join(', ')"
	parts = append(parts,
		"(has("+annotations+") ? [] : [JSONPatch{op: \"add\", path: \""+annotationsPath+"\", value: {}}])",
		"[JSONPatch{op: \"add\", path: \""+annotationsPath+"/\" + jsonpatch.escapeKey(\""+AnnotationGPULimitMissing+"\"), value: "+names+"}]")
	ops := []admissionv1.OperationType{admissionv1.Create}
	if t.template {
		ops = append(ops, admissionv1.Update)
	}
	return &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "MutatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", strings.Replace(t.policy, "berth-class-", "berth-gpu-limits-", 1), nil),
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy: ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: ops,
						Rule:       admissionv1.Rule{APIGroups: []string{t.group}, APIVersions: []string{"v1"}, Resources: t.resources},
					},
				}},
			},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "gpu-request-without-limit",
				Expression: containers + ".exists(c, " + missing("c") + ") || " + inits + ".exists(c, " + missing("c") + ")",
			}},
			Mutations:          []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{Expression: strings.Join(parts, " +\n")}}},
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
		},
	}
}
