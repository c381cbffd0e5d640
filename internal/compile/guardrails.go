package compile

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

// Guardrails are ValidatingAdmissionPolicies the API server evaluates
// itself: nothing of berth's sits in the admission path, and with
// failurePolicy Fail nothing fails open. Each rule is one validation
// whose message names the rule, the field and the fix.
//
// The policies name the blueprint's namespaces, pools and taints
// literally, so no label a user can edit decides who is exempt.

// Rule IDs, as they appear at the start of every refusal.
const (
	RuleGPULimit        = "berth/gpu-limit"
	RuleGPUWithoutGPU   = "berth/gpu-toleration-without-gpu"
	RuleGPUNamespace    = "berth/gpu-namespace"
	RuleSystemPool      = "berth/system-pool"
	RuleNodeName        = "berth/node-name"
	RulePriorityClass   = "berth/priority-class"
	RulePriorityValue   = "berth/priority-value"
	RuleNeverPreempt    = "berth/class-preemption"
	RuleClassPriority   = "berth/class-priority"
	RuleNamespaceLabels = "berth/namespace-labels"
)

// Policy names. They are the cluster's, not a blueprint's: every pod must
// pass every policy, so one blueprint per cluster has guardrails.
const (
	PodPolicy       = "berth-pods"
	WorkloadPolicy  = "berth-workloads"
	CronJobPolicy   = "berth-cronjobs"
	NamespacePolicy = "berth-namespaces"
)

// guardrails returns the policies and their bindings, or nothing when the
// blueprint turns guardrails off.
func guardrails(bp *v1alpha1.Blueprint) []Object {
	if bp.Spec.Guardrails == v1alpha1.GuardrailsOff {
		return nil
	}
	f := newFacts(bp)
	var out []Object
	for _, p := range []*admissionv1.ValidatingAdmissionPolicy{
		podPolicy(bp, f, PodPolicy, "object.spec", podRules(), true),
		podPolicy(bp, f, WorkloadPolicy, "object.spec.template.spec", workloadRules(), false),
		podPolicy(bp, f, CronJobPolicy, "object.spec.jobTemplate.spec.template.spec", cronJobRules(), false),
		namespacePolicy(bp, f),
	} {
		out = append(out, p, binding(bp, p.Name))
	}
	return out
}

// facts are what the rules need of the blueprint, as CEL literals.
type facts struct {
	gpuResources   string // ['nvidia.com/gpu']
	gpuPools       string // ['gpu', 'spot-gpu']
	systemPools    string
	gpuNamespaces  string // namespaces of teams with a GPU quota
	systemNS       string
	gpuTaints      []corev1.Taint
	systemTaints   []corev1.Taint
	teamClasses    string // {'team-a': ['inference-high'], ...}: the PriorityClasses each team namespace may use
	neverClasses   string // classes whose pods must not preempt
	neverPCs       map[string]string
	classPCs       map[string]string // class → its PriorityClass, for classes that have one
	teamNamespaces map[string]string // namespace → team
}

func newFacts(bp *v1alpha1.Blueprint) *facts {
	f := &facts{neverPCs: map[string]string{}, classPCs: map[string]string{}, teamNamespaces: map[string]string{}}
	var gpuPools, systemPools, gpuNS []string
	resources := map[string]bool{}
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		taints := parseTaints(p.Taints)
		if r := p.GPUResource(); r != "" {
			resources[r] = true
			gpuPools = append(gpuPools, p.Name)
			f.gpuTaints = appendTaints(f.gpuTaints, taints)
		}
		if p.Mode == v1alpha1.ModeSystem {
			systemPools = append(systemPools, p.Name)
			f.systemTaints = appendTaints(f.systemTaints, taints)
		}
	}
	classPC := map[string]string{}
	var allPCs []string
	for i := range bp.Spec.Classes {
		c := &bp.Spec.Classes[i]
		if pc := c.PriorityClassName(); pc != "" {
			classPC[c.Name] = pc
			f.classPCs[c.Name] = pc
			allPCs = append(allPCs, pc)
			if c.Preemption == v1alpha1.PreemptNever {
				f.neverPCs[c.Name] = pc
			}
		}
	}
	teamPCs := map[string][]string{}
	for _, t := range bp.Spec.Teams {
		pcs := allPCs
		if len(t.Classes) > 0 {
			pcs = nil
			for _, c := range t.Classes {
				if pc := classPC[c]; pc != "" {
					pcs = append(pcs, pc)
				}
			}
		}
		for _, ns := range t.Namespaces {
			f.teamNamespaces[ns] = t.Name
			teamPCs[ns] = pcs
			if t.Quota != nil && t.Quota.GPU != nil && t.Quota.GPU.Sign() > 0 {
				gpuNS = append(gpuNS, ns)
			}
		}
	}
	f.gpuResources = celList(sortedSet(resources))
	f.gpuPools = celList(gpuPools)
	f.systemPools = celList(systemPools)
	f.gpuNamespaces = celList(gpuNS)
	f.systemNS = celList(bp.Spec.SystemNamespaces)
	f.teamClasses = celMap(teamPCs)
	var never []string
	for c := range f.neverPCs {
		never = append(never, c)
	}
	sort.Strings(never)
	f.neverClasses = celList(never)
	return f
}

// rule is one validation over a pod spec held in variables.spec.
type rule struct {
	// expr holds when the object is acceptable.
	expr string
	// message is a CEL string expression: what is wrong and the fix.
	message string
}

// The rules each kind of object gets, the most telling first: the API
// server reports the first that fails. Pods get all that make sense for a
// running pod; workload templates also may not carry spec.priority, which
// for a pod the Priority admission plugin refuses itself.
func podRules() []string {
	return []string{RuleNodeName, RuleSystemPool, RuleGPUNamespace, RuleGPUWithoutGPU, RuleGPULimit, RulePriorityClass, RuleNeverPreempt, RuleClassPriority}
}

func workloadRules() []string {
	return []string{RuleNodeName, RuleSystemPool, RuleGPUNamespace, RuleGPUWithoutGPU, RuleGPULimit, RulePriorityClass, RulePriorityValue}
}

func cronJobRules() []string { return workloadRules() }

// podVariables are the CEL variables every pod rule reads.
func podVariables(f *facts, spec string, pods bool) []admissionv1.Variable {
	v := func(name, expr string) admissionv1.Variable {
		return admissionv1.Variable{Name: name, Expression: expr}
	}
	checked := "true"
	if pods {
		checked = "request.operation == 'CREATE' || (has(object.spec.tolerations) ? object.spec.tolerations : []) != (has(oldObject.spec.tolerations) ? oldObject.spec.tolerations : [])"
	}
	return []admissionv1.Variable{
		v("checked", checked),
		v("spec", spec),
		v("ns", "request.namespace"),
		v("containers", "variables.spec.containers + (has(variables.spec.initContainers) ? variables.spec.initContainers : [])"),
		v("tolerations", "has(variables.spec.tolerations) ? variables.spec.tolerations : []"),
		v("nodeSelector", "has(variables.spec.nodeSelector) ? variables.spec.nodeSelector : {}"),
		v("requiredTerms", "has(variables.spec.affinity) && has(variables.spec.affinity.nodeAffinity) && has(variables.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) ? variables.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms : []"),
		v("gpuContainers", "variables.containers.filter(c, has(c.resources) && ((has(c.resources.limits) && "+f.gpuResources+".exists(r, r in c.resources.limits)) || (has(c.resources.requests) && "+f.gpuResources+".exists(r, r in c.resources.requests))))"),
		v("gpuWithoutLimit", "variables.containers.filter(c, has(c.resources) && has(c.resources.requests) && "+f.gpuResources+".exists(r, r in c.resources.requests) && !(has(c.resources.limits) && "+f.gpuResources+".exists(r, r in c.resources.limits)))"),
		v("toleratesGPU", tolerates(f.gpuTaints)),
		v("toleratesSystem", tolerates(f.systemTaints)),
		v("selectsGPUPool", selects(f.gpuPools, true)),
		v("selectsSystemPool", selects(f.systemPools, false)),
		v("isSystemNS", "variables.ns in "+f.systemNS),
		v("priorityClass", "has(variables.spec.priorityClassName) ? variables.spec.priorityClassName : ''"),
	}
}

// tolerates is a CEL expression: some toleration tolerates one of taints
// (a toleration with no key and operator Exists tolerates every taint).
func tolerates(taints []corev1.Taint) string {
	if len(taints) == 0 {
		return "false"
	}
	var each []string
	for _, t := range taints {
		each = append(each, fmt.Sprintf(
			"(t.key == %q && ((has(t.operator) && t.operator == 'Exists') || (has(t.value) ? t.value : '') == %q) && (!has(t.effect) || t.effect == '' || t.effect == %q))",
			t.Key, t.Value, string(t.Effect)))
	}
	return "variables.tolerations.exists(t, (!has(t.key) || t.key == '') ? (has(t.operator) && t.operator == 'Exists') : (" + strings.Join(each, " || ") + "))"
}

// selects is a CEL expression: the pod's node selector or required node
// affinity picks one of pools (by berth.io/pool or AKS's agentpool), or,
// for GPU pools, asks for a GPU product.
func selects(pools string, gpu bool) string {
	if pools == "[]" {
		return "false"
	}
	keys := "['berth.io/pool', 'agentpool']"
	bySelector := "(('berth.io/pool' in variables.nodeSelector && variables.nodeSelector['berth.io/pool'] in " + pools + ") || ('agentpool' in variables.nodeSelector && variables.nodeSelector['agentpool'] in " + pools + "))"
	byAffinity := "variables.requiredTerms.exists(term, has(term.matchExpressions) && term.matchExpressions.exists(e, e.key in " + keys + " && e.operator == 'In' && has(e.values) && e.values.exists(v, v in " + pools + ")))"
	if gpu {
		bySelector = "(" + bySelector + " || 'nvidia.com/gpu.product' in variables.nodeSelector)"
		byAffinity = "(" + byAffinity + " || variables.requiredTerms.exists(term, has(term.matchExpressions) && term.matchExpressions.exists(e, e.key == 'nvidia.com/gpu.product' && e.operator in ['In', 'Exists'])))"
	}
	return bySelector + " || " + byAffinity
}

// rules are the validations by ID, for the objects at spec. Messages are
// CEL string expressions: lit quotes text, the rest is CEL.
func rules(f *facts, workload bool) map[string]rule {
	what := "this pod"
	if workload {
		what = "this workload's pod template"
	}
	msg := func(parts ...string) string { return strings.Join(parts, " + ") }
	return map[string]rule{
		RuleGPULimit: {
			"size(variables.gpuWithoutLimit) == 0",
			msg(lit(RuleGPULimit+": container "), "variables.gpuWithoutLimit[0].name",
				lit(` asks for GPUs in resources.requests without a limit. GPUs are whole devices and are not shared, so a GPU must be a limit. Fix: set resources.limits["nvidia.com/gpu"] to the number of GPUs.`))},
		RuleGPUWithoutGPU: {
			"variables.isSystemNS || !(variables.toleratesGPU || variables.selectsGPUPool) || size(variables.gpuContainers) > 0",
			lit(RuleGPUWithoutGPU + ": " + what + " tolerates a GPU pool's taint or selects a GPU pool (" + listText(f.gpuPools) + `) but no container asks for a GPU, so it would hold a GPU node without using it. Fix: set resources.limits["nvidia.com/gpu"] on the container that uses the GPU, or remove the toleration and node selector.`)},
		RuleGPUNamespace: {
			"variables.isSystemNS || !(variables.toleratesGPU || variables.selectsGPUPool) || variables.ns in " + f.gpuNamespaces,
			msg(lit(RuleGPUNamespace+": namespace "), "variables.ns",
				lit(" has no GPU quota, so it may not tolerate the GPU pools' taints or select them; namespaces with GPUs: "+listText(f.gpuNamespaces)+". Fix: run it in one of those, or give the team a quota.gpu in the blueprint."))},
		RuleSystemPool: {
			"variables.isSystemNS || !(variables.toleratesSystem || variables.selectsSystemPool)",
			lit(RuleSystemPool + ": " + what + " tolerates the System pools' taints or selects a System pool (" + listText(f.systemPools) + "), which only system namespaces (" + listText(f.systemNS) + ") may do. Fix: remove the toleration (a toleration with no key tolerates every taint) and the node selector; cluster add-ons go in a system namespace.")},
		RuleNodeName: {
			"variables.isSystemNS || !has(variables.spec.nodeName) || variables.spec.nodeName == ''",
			lit(RuleNodeName + ": " + what + " sets spec.nodeName, which skips the scheduler and every taint, quota and priority check; only system namespaces (" + listText(f.systemNS) + ") may. Fix: remove spec.nodeName and select the pool with nodeSelector berth.io/pool.")},
		RulePriorityClass: {
			"!(variables.ns in " + f.teamClasses + ") || variables.priorityClass == '' || variables.priorityClass in " + f.teamClasses + "[variables.ns]",
			msg(lit(RulePriorityClass+": namespace "), "variables.ns", lit(" may not use priorityClassName "), "variables.priorityClass",
				lit("; its team may use "), "(size("+f.teamClasses+"[variables.ns]) == 0 ? 'none' : "+f.teamClasses+"[variables.ns].join(', '))",
				lit(". Fix: use one of those, or add the class to the team's classes in the blueprint."))},
		RulePriorityValue: {
			"!has(variables.spec.priority)",
			lit(RulePriorityValue + ": " + what + " sets spec.priority to a number; priority comes only from a PriorityClass. Fix: remove spec.priority and set spec.priorityClassName.")},
		RuleNeverPreempt: {
			"!(has(object.metadata.labels) && 'berth.io/class' in object.metadata.labels && object.metadata.labels['berth.io/class'] in " + f.neverClasses + ") || (has(variables.spec.preemptionPolicy) && variables.spec.preemptionPolicy == 'Never')",
			msg(lit(RuleNeverPreempt+": pods of class "), "object.metadata.labels['berth.io/class']",
				lit(" run with preemptionPolicy Never, so that they wait for room rather than evict anything; this pod has "),
				"(has(variables.spec.preemptionPolicy) ? variables.spec.preemptionPolicy : 'none')",
				lit(". Fix: set priorityClassName "), celStringMap(f.neverPCs)+"[object.metadata.labels['berth.io/class']]",
				lit(" (it carries preemptionPolicy Never)."))},
		// The Priority admission plugin runs before mutating policies, so
		// a bare pod's class cannot be given its priority: it must name it.
		RuleClassPriority: {
			"!(has(object.metadata.labels) && 'berth.io/class' in object.metadata.labels && object.metadata.labels['berth.io/class'] in " + celStringMap(f.classPCs) + ") || variables.priorityClass == " + celStringMap(f.classPCs) + "[object.metadata.labels['berth.io/class']]",
			msg(lit(RuleClassPriority+": pods of class "), "object.metadata.labels['berth.io/class']", lit(" run at priorityClassName "),
				celStringMap(f.classPCs)+"[object.metadata.labels['berth.io/class']]", lit("; this pod has "), "(variables.priorityClass == '' ? 'none' : variables.priorityClass)",
				lit(". A pod created directly cannot be given it on admission (priority is settled before mutation); a Deployment, StatefulSet, Job or CronJob of the class gets it by itself. Fix: set spec.priorityClassName, or run the pod from a workload."))},
	}
}

// lit is text as a CEL string literal.
func lit(s string) string { return strconv.Quote(s) }

func podPolicy(bp *v1alpha1.Blueprint, f *facts, name, spec string, ids []string, pods bool) *admissionv1.ValidatingAdmissionPolicy {
	all := rules(f, !pods)
	var validations []admissionv1.Validation
	for _, id := range ids {
		r := all[id]
		validations = append(validations, admissionv1.Validation{Expression: r.expr, MessageExpression: r.message, Reason: ptrTo(metav1.StatusReasonForbidden)})
	}
	resources := []admissionv1.NamedRuleWithOperations{}
	switch name {
	case PodPolicy:
		resources = append(resources, ruleFor("", "v1", "pods"))
		// A running pod is updated by controllers all the time; only a
		// new pod, or one whose tolerations change (the one scheduling
		// field a pod update may touch), is checked. This is a guard on
		// each validation rather than a match condition, which would
		// build a second CEL view of every pod.
		for i := range validations {
			validations[i].Expression = "!variables.checked || (" + validations[i].Expression + ")"
		}
	case WorkloadPolicy:
		resources = append(resources, ruleFor("apps", "v1", "deployments", "replicasets", "statefulsets", "daemonsets"), ruleFor("batch", "v1", "jobs"))
	case CronJobPolicy:
		resources = append(resources, ruleFor("batch", "v1", "cronjobs"))
	}
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "ValidatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", name, nil),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: resources},
			Variables:        podVariables(f, spec, pods),
			Validations:      validations,
		},
	}
}

// namespacePolicy keeps the labels berth gives its namespaces as berth
// gave them, and keeps other namespaces from claiming them.
func namespacePolicy(bp *v1alpha1.Blueprint, f *facts) *admissionv1.ValidatingAdmissionPolicy {
	teams := map[string][]string{}
	for ns, t := range f.teamNamespaces {
		teams[ns] = []string{t}
	}
	mine := celMap(teams)
	labels := "(has(object.metadata.labels) ? object.metadata.labels : {})"
	expr := "object.metadata.name in " + mine +
		" ? (" + labels + "['berth.io/team'] == " + mine + "[object.metadata.name][0] && " + labels + "['berth.io/blueprint'] == " + strconv.Quote(bp.Metadata.Name) + ")" +
		" : !(" + labels + ".exists(k, k == 'berth.io/team') && " + labels + "['berth.io/team'] in " + celList(teamNames(bp)) + ")"
	// Namespaces are created before berth labels them only by berth
	// itself, in one apply; a namespace created bare by someone else is
	// adopted by the next apply, which sets the labels.
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "ValidatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", NamespacePolicy, nil),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression:        expr,
				MessageExpression: lit(RuleNamespaceLabels + ": the labels berth.io/team and berth.io/blueprint say which team a namespace belongs to; only the blueprint " + bp.Metadata.Name + " changes them. Fix: change the team in the blueprint and run berth apply."),
				Reason:            ptrTo(metav1.StatusReasonForbidden),
			}},
		},
	}
}

func binding(bp *v1alpha1.Blueprint, policy string) *admissionv1.ValidatingAdmissionPolicyBinding {
	actions := map[v1alpha1.GuardrailMode][]admissionv1.ValidationAction{
		v1alpha1.GuardrailsEnforce: {admissionv1.Deny},
		v1alpha1.GuardrailsWarn:    {admissionv1.Warn},
		v1alpha1.GuardrailsAudit:   {admissionv1.Audit},
	}[bp.Spec.Guardrails]
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "ValidatingAdmissionPolicyBinding"),
		ObjectMeta: meta(bp, "", policy, nil),
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions},
	}
}

func ruleFor(group, version string, resources ...string) admissionv1.NamedRuleWithOperations {
	return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
		Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources},
	}}
}

func parseTaints(specs []string) []corev1.Taint {
	var out []corev1.Taint
	for _, s := range specs {
		if t, err := v1alpha1.ParseTaint(s); err == nil {
			out = append(out, t)
		}
	}
	return out
}

func appendTaints(have, more []corev1.Taint) []corev1.Taint {
	for _, t := range more {
		dup := false
		for _, h := range have {
			dup = dup || (h.Key == t.Key && h.Value == t.Value && h.Effect == t.Effect)
		}
		if !dup {
			have = append(have, t)
		}
	}
	return have
}

func teamNames(bp *v1alpha1.Blueprint) []string {
	var out []string
	for _, t := range bp.Spec.Teams {
		out = append(out, t.Name)
	}
	return out
}

// celList writes strings as a CEL list literal.
func celList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// celMap writes a map of string lists as a CEL map literal, keys sorted.
func celMap(m map[string][]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.Quote(k) + ": " + celList(m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// celStringMap writes a map of strings as a CEL map literal, keys sorted.
func celStringMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.Quote(k) + ": " + strconv.Quote(m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// listText writes a CEL list literal for a message: "a, b", or "none".
func listText(celList string) string {
	s := strings.NewReplacer(`"`, "", "[", "", "]", "").Replace(celList)
	if s == "" {
		return "none"
	}
	return s
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func ptrTo[T any](v T) *T { return &v }
