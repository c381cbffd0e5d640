package compile

import (
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

// Guardrails under queueing: Kueue. Kueue manages a Job only when it
// names a LocalQueue (kueue.x-k8s.io/queue-name); one that names none
// runs beside Kueue's quotas, on no quota at all, since the
// ResourceQuota no longer counts GPUs. So a team's Job that names no
// queue is given its team's on admission (a mutating policy, before
// Kueue's webhook suspends it), and one that names another team's queue,
// which would wait forever (no such LocalQueue in the namespace), is
// refused with the fix. Only Jobs: the Job integration is the one berth
// runs Kueue with (internal/kueue).

// Policy names of the Kueue guardrails.
const (
	QueuePolicy       = "berth-kueue-queue"
	QueueCheckPolicy  = "berth-kueue-queues"
	FixTeamQueueLabel = "Set the label " + v1alpha1.LabelKueueQueueName + " to the namespace's team, or leave it out and berth sets it."
)

// queueGuardrails are the Kueue guardrails and their bindings, or nothing
// when the blueprint queues with ResourceQuota or turns guardrails off.
func queueGuardrails(bp *v1alpha1.Blueprint) []Object {
	if !bp.Spec.UsesKueue() || bp.Spec.Guardrails == v1alpha1.GuardrailsOff {
		return nil
	}
	// The LocalQueue of each team namespace is named after its team
	// (kueueObjects), written literally, as every policy names the
	// blueprint's namespaces.
	queues := celStringMap(newFacts(bp).teamNamespaces)
	label := strconv.Quote(v1alpha1.LabelKueueQueueName)
	labels := "(has(object.metadata.labels) ? object.metadata.labels : {})"
	queue := queues + "[request.namespace]"
	jobs := []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Create},
		Rule:       admissionv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
	}}}
	mutating := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "MutatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", QueuePolicy, nil),
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy:    ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: jobs},
			MatchConditions: []admissionv1.MatchCondition{{Name: "team-job-without-queue",
				Expression: "request.namespace in " + queues + " && !(" + label + " in " + labels + ")"}},
			Mutations: []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionv1.ApplyConfiguration{
				Expression: "Object{metadata: Object.metadata{labels: {" + label + ": " + queue + "}}}",
			}}},
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
		},
	}
	validating := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "ValidatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", QueueCheckPolicy, nil),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{ruleFor("batch", "v1", "jobs")}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "team-job-with-queue",
				Expression: "request.namespace in " + queues + " && " + label + " in " + labels}},
			Validations: []admissionv1.Validation{{
				Expression: labels + "[" + label + "] == " + queue,
				MessageExpression: messageExpression(v1alpha1.RuleTeamQueue, []part{
					text("Job "), cel("object.metadata.name"), text(" names LocalQueue "), cel(labels + "[" + label + "]"),
					text(", but namespace "), cel("request.namespace"), text(" is team "), cel(queue), text("'s, whose LocalQueue is "), cel(queue),
					text(": Kueue would keep it waiting for a queue the namespace does not have"),
				}, FixTeamQueueLabel),
				Reason: ptrTo(metav1.StatusReasonForbidden),
			}},
		},
	}
	return []Object{
		mutating,
		&admissionv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "MutatingAdmissionPolicyBinding"),
			ObjectMeta: meta(bp, "", QueuePolicy, nil),
			Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: QueuePolicy},
		},
		validating,
		binding(bp, QueueCheckPolicy),
	}
}
