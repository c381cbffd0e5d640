package compile

import (
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

// Class mutation: a workload labelled berth.io/class=NAME (the label on
// the Deployment, StatefulSet, Job, CronJob or Pod itself) receives its
// class's tolerations and node affinity (its pools, in preference order),
// and, in a pod template, its priority class; a class with zone spread
// gets a zone TopologySpreadConstraint when it has none. All of it is
// MutatingAdmissionPolicy: the API server does it, nothing of berth's is
// in the path.
//
// A pod that asks for GPUs is sent to the class's GPU pools, any other to
// its pools without GPUs, so that a CPU replica never tolerates a GPU
// taint (which the guardrails refuse). The Priority admission plugin runs
// before mutating policies, so a bare Pod's priority class would be set
// too late to count: bare Pods are validated instead (berth/class-priority).

// mutationTarget is one kind of object the class policies mutate.
type mutationTarget struct {
	policy    string
	group     string
	resources []string
	// spec is the pod spec as CEL, path as a JSON pointer, and object
	// the CEL type name of the object at it.
	spec, path, object string
	// labels is the pod labels as CEL, labelsPath their JSON pointer.
	labels, labelsPath string
	template           bool
	// hashKey is a pod label the controller adds per revision, kept out
	// of the spread constraint's selector.
	hashKey string
	// job is the Job spec as CEL, jobPath its JSON pointer and jobObject
	// its CEL type name; "" for targets that are not Jobs or CronJobs.
	job, jobPath, jobObject string
	// jobImmutable: the Job's podFailurePolicy cannot change once it
	// exists, so it is only given on CREATE (a CronJob's jobTemplate can).
	jobImmutable bool
}

var mutationTargets = []mutationTarget{
	{policy: "berth-class-pods", group: "", resources: []string{"pods"},
		spec: "object.spec", path: "/spec", object: "Object.spec",
		labels: "object.metadata.labels", labelsPath: "/metadata/labels"},
	{policy: "berth-class-deployments", group: "apps", resources: []string{"deployments"},
		spec: "object.spec.template.spec", path: "/spec/template/spec", object: "Object.spec.template.spec",
		labels: "object.spec.template.metadata.labels", labelsPath: "/spec/template/metadata/labels", template: true, hashKey: "pod-template-hash"},
	{policy: "berth-class-statefulsets", group: "apps", resources: []string{"statefulsets"},
		spec: "object.spec.template.spec", path: "/spec/template/spec", object: "Object.spec.template.spec",
		labels: "object.spec.template.metadata.labels", labelsPath: "/spec/template/metadata/labels", template: true, hashKey: "controller-revision-hash"},
	{policy: "berth-class-jobs", group: "batch", resources: []string{"jobs"},
		spec: "object.spec.template.spec", path: "/spec/template/spec", object: "Object.spec.template.spec",
		labels: "object.spec.template.metadata.labels", labelsPath: "/spec/template/metadata/labels", template: true,
		job: "object.spec", jobPath: "/spec", jobObject: "Object.spec", jobImmutable: true},
	{policy: "berth-class-cronjobs", group: "batch", resources: []string{"cronjobs"},
		spec: "object.spec.jobTemplate.spec.template.spec", path: "/spec/jobTemplate/spec/template/spec", object: "Object.spec.jobTemplate.spec.template.spec",
		labels: "object.spec.jobTemplate.spec.template.metadata.labels", labelsPath: "/spec/jobTemplate/spec/template/metadata/labels", template: true,
		job: "object.spec.jobTemplate.spec", jobPath: "/spec/jobTemplate/spec", jobObject: "Object.spec.jobTemplate.spec"},
}

// classPolicies returns the mutating policies and their bindings, or
// nothing when the blueprint turns guardrails off. Besides the classes'
// mutations they complete GPU limits (gpulimits.go), so a blueprint
// without classes has them too.
func classPolicies(bp *v1alpha1.Blueprint) []Object {
	if bp.Spec.Guardrails == v1alpha1.GuardrailsOff {
		return nil
	}
	var out []Object
	for _, t := range mutationTargets {
		p := classPolicy(bp, t)
		out = append(out, p, &admissionv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "MutatingAdmissionPolicyBinding"),
			ObjectMeta: meta(bp, "", p.Name, nil),
			Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p.Name},
		})
	}
	return out
}

func classPolicy(bp *v1alpha1.Blueprint, t mutationTarget) *admissionv1.MutatingAdmissionPolicy {
	var names []string
	pcClass := map[string]string{}
	for _, c := range bp.Spec.Classes {
		names = append(names, c.Name)
		if pc := c.PriorityClassName(); pc != "" {
			pcClass[pc] = c.Name
		}
	}
	// An object is of a class by the label on itself, else by the label
	// on its pod template (charts label the template), else by its
	// priority class: leaving the label off exempts nothing.
	label := strconv.Quote(v1alpha1.LabelClass)
	classes := celList(names)
	objLabels := "(has(object.metadata.labels) ? object.metadata.labels : {})"
	podLabels := "(has(" + t.labels + ") ? " + t.labels + " : {})"
	if t.template {
		podLabels = "(has(" + strings.TrimSuffix(t.labels, ".labels") + ") && has(" + t.labels + ") ? " + t.labels + " : {})"
	}
	pc := "(has(" + t.spec + ".priorityClassName) ? " + t.spec + ".priorityClassName : '')"
	classOf := "(" + label + " in " + objLabels + " && " + objLabels + "[" + label + "] in " + classes + ") ? " + objLabels + "[" + label + "]" +
		" : (" + label + " in " + podLabels + " && " + podLabels + "[" + label + "] in " + classes + ") ? " + podLabels + "[" + label + "]" +
		" : " + pc + " in " + celStringMap(pcClass) + " ? " + celStringMap(pcClass) + "[" + pc + "] : ''"
	if len(names) == 0 {
		classOf = "''"
	}
	gpuMissing, gpuParts := gpuLimits(bp, t)
	gpus := celList(gpuResources(bp))
	vars := []admissionv1.Variable{
		{Name: "class", Expression: classOf},
		{Name: "asksGPU", Expression: t.spec + ".containers.exists(c, has(c.resources) && ((has(c.resources.limits) && " + gpus + ".exists(r, r in c.resources.limits)) || (has(c.resources.requests) && " + gpus + ".exists(r, r in c.resources.requests))))"},
		{Name: "gpuLimitMissing", Expression: gpuMissing},
	}
	// One JSON patch for everything: the API server encodes and decodes
	// the object once per mutation, so one mutation of many operations
	// costs a fraction of many mutations of one.
	var parts []string
	for i := range bp.Spec.Classes {
		parts = append(parts, classPatches(bp, &bp.Spec.Classes[i], t)...)
	}
	parts = append(parts, gpuParts...)
	mutations := []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{Expression: strings.Join(parts, " +\n")}}}
	// A pod's placement cannot change once it exists, so pods are
	// mutated when created; templates on every change.
	ops := []admissionv1.OperationType{admissionv1.Create}
	if t.template {
		ops = append(ops, admissionv1.Update)
	}
	return &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "MutatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", t.policy, nil),
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
			MatchConditions:    []admissionv1.MatchCondition{{Name: "of-a-class-or-gpu-limit-missing", Expression: "(" + classOf + ") != '' || " + gpuMissing}},
			Variables:          vars,
			Mutations:          mutations,
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
		},
	}
}

// classPatches are one class's JSON patch lists for one target, as CEL;
// each is empty unless the object is of the class and lacks what it adds.
func classPatches(bp *v1alpha1.Blueprint, c *v1alpha1.Class, t mutationTarget) []string {
	var gpuPools, otherPools []*v1alpha1.Pool
	for _, name := range c.Pools {
		for i := range bp.Spec.Pools {
			p := &bp.Spec.Pools[i]
			if p.Name != name || p.Mode == v1alpha1.ModeSystem {
				continue
			}
			if p.GPUResource() != "" {
				gpuPools = append(gpuPools, p)
			} else {
				otherPools = append(otherPools, p)
			}
		}
	}
	is := "variables.class != " + strconv.Quote(c.Name)
	// byGPU picks the GPU pools' form for a pod that asks for GPUs and
	// the other pools' form otherwise; a side with no pools adds nothing.
	byGPU := func(gpu, other string) string {
		switch {
		case gpu != "" && other != "":
			return "variables.asksGPU ? " + gpu + " : " + other
		case gpu != "":
			return "!variables.asksGPU ? [] : " + gpu
		case other != "":
			return "variables.asksGPU ? [] : " + other
		}
		return "[]"
	}
	var out []string
	// add appends a patch list unless it could never add anything (CEL
	// cannot type a list that is only ever empty).
	add := func(guard, body string) {
		if body != "[]" {
			out = append(out, "("+guard+" ? [] : "+body+")")
		}
	}

	// Tolerations: each one whose key the pod does not tolerate yet,
	// appended one by one (to an empty list when it has none). A list of
	// objects as one patch value panics the 1.36 API server's JSON
	// patcher; single objects do not.
	tols := func(pools []*v1alpha1.Pool) string {
		list := tolerationList(pools, t.object+".tolerations")
		if list == "" {
			return ""
		}
		return "((!has(" + t.spec + ".tolerations) ? [JSONPatch{op: \"add\", path: \"" + t.path + "/tolerations\", value: []}] : []) + " +
			list + ".filter(n, !(has(" + t.spec + ".tolerations) && " + t.spec + ".tolerations.exists(e, has(e.key) && e.key == n.key))).map(n, JSONPatch{op: \"add\", path: \"" + t.path + "/tolerations/-\", value: n}))"
	}
	add(is, byGPU(tols(gpuPools), tols(otherPools)))

	// Affinity: an empty one first when the pod has none and the class
	// adds node affinity or GPU isolation to it.
	anti := antiAffinity(bp, c, t)
	needsNode := "(variables.asksGPU ? " + strconv.FormatBool(len(gpuPools) > 0) + " : " + strconv.FormatBool(len(otherPools) > 0) + ")"
	if anti != "" {
		needsNode = "(" + needsNode + " || variables.asksGPU)"
	}
	add(is+" || has("+t.spec+".affinity) || !"+needsNode, "[JSONPatch{op: \"add\", path: \""+t.path+"/affinity\", value: "+t.object+".affinity{}}]")

	// Node affinity: the class's pools required, in preference order
	// preferred; only when the pod says nothing about node affinity.
	affinity := func(pools []*v1alpha1.Pool) string {
		if len(pools) == 0 {
			return ""
		}
		return "[JSONPatch{op: \"add\", path: \"" + t.path + "/affinity/nodeAffinity\", value: " + nodeAffinity(pools, t.object+".affinity.nodeAffinity") + "}]"
	}
	add(is+" || (has("+t.spec+".affinity) && has("+t.spec+".affinity.nodeAffinity))", byGPU(affinity(gpuPools), affinity(otherPools)))
	if anti != "" {
		add(is+" || !variables.asksGPU", anti)
	}

	// The pods carry the class, so that budgets and the other role's
	// isolation select them.
	add(is+" || !has("+t.labels+") || \""+v1alpha1.LabelClass+"\" in "+t.labels, "[JSONPatch{op: \"add\", path: \""+t.labelsPath+"/\" + jsonpatch.escapeKey(\""+v1alpha1.LabelClass+"\"), value: "+strconv.Quote(c.Name)+"}]")
	add(is+" || has("+t.labels+")", "[JSONPatch{op: \"add\", path: \""+t.labelsPath+"\", value: {"+strconv.Quote(v1alpha1.LabelClass)+": "+strconv.Quote(c.Name)+"}}]")
	if t.template {
		if pc := c.PriorityClassName(); pc != "" {
			add(is+" || has("+t.spec+".priorityClassName)", "[JSONPatch{op: \"add\", path: \""+t.path+"/priorityClassName\", value: "+strconv.Quote(pc)+"}]")
		}
	}
	if c.Spread == v1alpha1.SpreadZone {
		// nodeTaintsPolicy Honor: a zone whose nodes are tainted
		// unreachable (dead) stops counting as a domain, so replacements
		// of its replicas are placed in the zones left; with the default,
		// Ignore, the dead zone's count of 0 holds the skew and they stay
		// Pending until it returns (zone_test.go shows both).
		// The selector is the class plus, through matchLabelKeys, the
		// values of the pod's own labels (and the controller's revision
		// hash), so replicas of one workload spread among themselves. A
		// copy of the pod's labels map as matchLabels would do the same,
		// but a map taken from the request inside a patch value panics
		// the 1.36 API server's JSON patcher.
		tsc := t.object + ".topologySpreadConstraints"
		keys := "(has(" + t.labels + ") ? " + t.labels + ".filter(k, k != \"" + v1alpha1.LabelClass + "\") : [])"
		if t.hashKey != "" {
			keys += " + [" + strconv.Quote(t.hashKey) + "]"
		}
		add(is+" || has("+t.spec+".topologySpreadConstraints)", "[JSONPatch{op: \"add\", path: \""+t.path+"/topologySpreadConstraints\", value: []}, JSONPatch{op: \"add\", path: \""+t.path+"/topologySpreadConstraints/-\", value: "+
			tsc+"{maxSkew: 1, topologyKey: \""+corev1.LabelTopologyZone+"\", whenUnsatisfiable: \"DoNotSchedule\", nodeTaintsPolicy: \"Honor\", labelSelector: "+tsc+".labelSelector{matchLabels: {"+strconv.Quote(v1alpha1.LabelClass)+": "+strconv.Quote(c.Name)+"}}, matchLabelKeys: "+keys+"}}]")
	}
	if t.job != "" {
		spot := disruptionRule(t)
		add(disruptionGuard(t, is), byGPU(onlyIf(hasSpot(gpuPools), spot), onlyIf(hasSpot(otherPools), spot)))
	}
	return out
}

// tolerationList is a CEL list of the tolerations for pools' taints, as
// objects of type typ, or "" when they have none.
func tolerationList(pools []*v1alpha1.Pool, typ string) string {
	var taints []corev1.Taint
	for _, p := range pools {
		taints = appendTaints(taints, p.NodeTaints())
	}
	if len(taints) == 0 {
		return ""
	}
	items := make([]string, len(taints))
	for i, t := range taints {
		op := "operator: \"Equal\", value: " + strconv.Quote(t.Value)
		if t.Value == "" {
			op = "operator: \"Exists\""
		}
		items[i] = fmt.Sprintf("%s{key: %q, %s, effect: %q}", typ, t.Key, op, string(t.Effect))
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// nodeAffinity is a CEL object of type typ: pools required, and preferred
// with weights falling in their order.
func nodeAffinity(members []*v1alpha1.Pool, typ string) string {
	names := make([]string, len(members))
	for i, p := range members {
		names[i] = p.Name
	}
	req := typ + ".requiredDuringSchedulingIgnoredDuringExecution"
	term := req + ".nodeSelectorTerms"
	expr := term + ".matchExpressions"
	out := typ + "{requiredDuringSchedulingIgnoredDuringExecution: " + req + "{nodeSelectorTerms: [" + term + "{matchExpressions: [" +
		expr + "{key: \"" + v1alpha1.LabelPool + "\", operator: \"In\", values: " + celList(names) + "}]}]}"
	if len(members) > 1 {
		pref := typ + ".preferredDuringSchedulingIgnoredDuringExecution"
		var prefs []string
		for i, p := range members {
			weight := 100 - i*100/len(members)
			prefs = append(prefs, fmt.Sprintf("%s{weight: %d, preference: %s.preference{matchExpressions: [%s.preference.matchExpressions{key: %q, operator: \"In\", values: [%q]}]}}",
				pref, weight, pref, pref, v1alpha1.LabelPool, p.Name))
		}
		out += ", preferredDuringSchedulingIgnoredDuringExecution: [" + strings.Join(prefs, ", ") + "]"
	}
	return out + "}"
}

// antiAffinity is the JSON patch list, as CEL, that keeps a Serving or
// Training class's GPU pods off nodes running the other role's pods
// (kubernetes.io/hostname), or "" when the class has no such isolation.
// Each side carries the term, so the isolation holds whichever pod comes
// first; with Required the scheduler must honour it, with Preferred it
// weighs it. A term already there (the object was mutated before) is not
// added again.
func antiAffinity(bp *v1alpha1.Blueprint, c *v1alpha1.Class, t mutationTarget) string {
	other := map[v1alpha1.ClassRole]v1alpha1.ClassRole{v1alpha1.RoleServing: v1alpha1.RoleTraining, v1alpha1.RoleTraining: v1alpha1.RoleServing}[c.EffectiveRole()]
	if other == "" || c.EffectiveIsolation() == v1alpha1.IsolationNone {
		return ""
	}
	var avoid []string
	for i := range bp.Spec.Classes {
		if bp.Spec.Classes[i].EffectiveRole() == other {
			avoid = append(avoid, bp.Spec.Classes[i].Name)
		}
	}
	if len(avoid) == 0 {
		return ""
	}
	paa := t.object + ".affinity.podAntiAffinity"
	field := "requiredDuringSchedulingIgnoredDuringExecution"
	termType := paa + "." + field
	termOf := "n"
	if c.EffectiveIsolation() == v1alpha1.IsolationPreferred {
		field = "preferredDuringSchedulingIgnoredDuringExecution"
		termType = paa + "." + field + ".podAffinityTerm"
		termOf = "n.podAffinityTerm"
	}
	term := termType + "{topologyKey: \"" + corev1.LabelHostname + "\", labelSelector: " + termType + ".labelSelector{matchExpressions: [" +
		termType + ".labelSelector.matchExpressions{key: \"" + v1alpha1.LabelClass + "\", operator: \"In\", values: " + celList(avoid) + "}]}}"
	if c.EffectiveIsolation() == v1alpha1.IsolationPreferred {
		term = paa + "." + field + "{weight: 100, podAffinityTerm: " + term + "}"
	}
	has := "has(" + t.spec + ".affinity) && has(" + t.spec + ".affinity.podAntiAffinity)"
	list := t.spec + ".affinity.podAntiAffinity." + field
	present := "(" + has + " && has(" + list + ") && " + list + ".exists(n, " + termOf + ".topologyKey == \"" + corev1.LabelHostname + "\" && has(" + termOf + ".labelSelector) && has(" + termOf + ".labelSelector.matchExpressions) && " +
		termOf + ".labelSelector.matchExpressions.exists(e, e.key == \"" + v1alpha1.LabelClass + "\")))"
	path := t.path + "/affinity/podAntiAffinity"
	return "(" + present + " ? [] : !(" + has + ") ? [JSONPatch{op: \"add\", path: \"" + path + "\", value: " + paa + "{" + field + ": [" + term + "]}}]" +
		" : (!has(" + list + ") ? [JSONPatch{op: \"add\", path: \"" + path + "/" + field + "\", value: []}] : []) + [JSONPatch{op: \"add\", path: \"" + path + "/" + field + "/-\", value: " + term + "}])"
}
