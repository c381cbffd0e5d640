package compile

import (
	"fmt"
	"slices"
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
// failurePolicy Fail nothing fails open. Each rule is a validation (or
// two) whose message, made by messageExpression, names the rule, what is
// wrong and the fix.
//
// The policies name the blueprint's namespaces, pools and taints
// literally, so no label a user can edit decides who is exempt.

// Policy names. They are the cluster's, not a blueprint's: every pod must
// pass every policy, so one blueprint per cluster has guardrails.
const (
	PodPolicy       = "berth-pods"
	WorkloadPolicy  = "berth-workloads"
	CronJobPolicy   = "berth-cronjobs"
	NamespacePolicy = "berth-namespaces"
	PriorityPolicy  = "berth-priorityclasses"
)

// The API server's own validation refuses a container that asks for
// GPUs in requests only, before any validating policy runs, with a
// message that has no fix in it; so a mutating policy (gpulimits.go)
// completes the limit and sets v1alpha1.AnnotationGPULimitMissing, naming
// the containers, and the berth/gpu-limit rule refuses the object with
// berth's message.

// System PriorityClasses every cluster has. Only system namespaces may
// use them.
var systemPriorityClasses = []string{"system-cluster-critical", "system-node-critical"}

// guardrails returns the policies and their bindings, or nothing when the
// blueprint turns guardrails off.
func guardrails(bp *v1alpha1.Blueprint) []Object {
	if bp.Spec.Guardrails == v1alpha1.GuardrailsOff {
		return nil
	}
	f := newFacts(bp)
	var out []Object
	for _, p := range []*admissionv1.ValidatingAdmissionPolicy{
		podPolicy(bp, f, PodPolicy, "object", podRules(), true),
		podPolicy(bp, f, WorkloadPolicy, "object.spec.template", workloadRules(), false),
		podPolicy(bp, f, CronJobPolicy, "object.spec.jobTemplate.spec.template", cronJobRules(), false),
		namespacePolicy(bp, f),
		priorityClassPolicy(bp, f),
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
	// shapes are the pools as a selection sees them; gpuIdx and
	// systemIdx index the GPU and System pools among them.
	shapes            []poolShape
	pools             map[string]string // poolData(shapes)
	gpuIdx, systemIdx []int
	// defaultPriority is what a pod that names no class gets: the
	// blueprint's globalDefault class, or 0. It is the ceiling of every
	// namespace outside the blueprint.
	defaultPriority int32
	ceilings        string // {'team-a': 100000, ...}: each team namespace's ceiling
	otherClasses    string // the classes namespaces outside the blueprint may name
	pcClass         string // {'inference-high': 'inference', ...}
}

func newFacts(bp *v1alpha1.Blueprint) *facts {
	f := &facts{neverPCs: map[string]string{}, classPCs: map[string]string{}, teamNamespaces: map[string]string{}}
	var gpuPools, systemPools, gpuNS []string
	resources := map[string]bool{}
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		taints := p.NodeTaints()
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
	f.shapes = poolShapes(bp)
	f.pools = poolData(f.shapes)
	f.gpuIdx = poolIndexes(f.shapes, func(name string) bool { return slices.Contains(gpuPools, name) })
	f.systemIdx = poolIndexes(f.shapes, func(name string) bool { return slices.Contains(systemPools, name) })
	values := map[string]int32{}
	pcClass := map[string]string{}
	for i := range bp.Spec.Classes {
		c := &bp.Spec.Classes[i]
		if pc := c.PriorityClassName(); pc != "" {
			values[pc] = priorityValues[c.Priority]
			pcClass[pc] = c.Name
			if c.GlobalDefault {
				f.defaultPriority = priorityValues[c.Priority]
			}
		}
	}
	f.pcClass = celStringMap(pcClass)
	var others []string
	for _, pc := range allPCs {
		if values[pc] <= f.defaultPriority {
			others = append(others, pc)
		}
	}
	f.otherClasses = celList(others)
	ceilings := map[string]int32{}
	for ns, pcs := range teamPCs {
		ceilings[ns] = f.defaultPriority
		for _, pc := range pcs {
			ceilings[ns] = max(ceilings[ns], values[pc])
		}
	}
	f.ceilings = celIntMap(ceilings)
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
	// what says what is wrong, without a final period; fix is the
	// remedy, plain text. messageExpression makes the message of them.
	what []part
	fix  string
}

// The rules each kind of object gets, the most telling first: the API
// server reports the first that fails. Pods are held to their resolved
// priority (the Priority admission plugin has set spec.priority from the
// class before validation); templates carry only a class name, checked
// against the classes the namespace's ceiling allows, and may not carry
// spec.priority, which for a pod the Priority plugin refuses itself.
func podRules() []string {
	return []string{v1alpha1.RuleNodeName, v1alpha1.RuleSystemPool, v1alpha1.RuleGPUNamespace, v1alpha1.RuleGPUWithoutGPU, v1alpha1.RuleGPULimit, v1alpha1.RulePriorityClass, v1alpha1.RulePriorityCeiling, v1alpha1.RuleClassPreemption, v1alpha1.RuleClassPriority}
}

func workloadRules() []string {
	return []string{v1alpha1.RuleNodeName, v1alpha1.RuleSystemPool, v1alpha1.RuleGPUNamespace, v1alpha1.RuleGPUWithoutGPU, v1alpha1.RuleGPULimit, v1alpha1.RulePriorityClass, v1alpha1.RulePriorityValue, v1alpha1.RuleClassPriority}
}

func cronJobRules() []string { return workloadRules() }

// podVariables are the CEL variables every pod rule reads; pod is the
// pod, or the pod template, as CEL.
func podVariables(f *facts, pod string, pods bool) []admissionv1.Variable {
	v := func(name, expr string) admissionv1.Variable {
		return admissionv1.Variable{Name: name, Expression: expr}
	}
	checked, meta := "true", "has("+pod+".metadata) && "
	if pods {
		checked = "request.operation == 'CREATE' || " + changed("tolerations") + " || " + changed("nodeSelector") + " || " + changed("affinity")
		meta = ""
	}
	return []admissionv1.Variable{
		v("checked", checked),
		v("spec", pod+".spec"),
		v("ns", "request.namespace"),
		v("podLabels", meta+"has("+pod+".metadata.labels) ? "+pod+".metadata.labels : {}"),
		v("podAnnotations", meta+"has("+pod+".metadata.annotations) ? "+pod+".metadata.annotations : {}"),
		v("classLabel", "'"+v1alpha1.LabelClass+"' in variables.podLabels ? variables.podLabels['"+v1alpha1.LabelClass+"'] : ''"),
		v("containers", "variables.spec.containers + (has(variables.spec.initContainers) ? variables.spec.initContainers : [])"),
		v("tolerations", "has(variables.spec.tolerations) ? variables.spec.tolerations : []"),
		v("nodeSelector", "has(variables.spec.nodeSelector) ? variables.spec.nodeSelector : {}"),
		v("requiredTerms", "has(variables.spec.affinity) && has(variables.spec.affinity.nodeAffinity) && has(variables.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) ? variables.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms : []"),
		v("gpuContainers", "variables.containers.filter(c, has(c.resources) && ((has(c.resources.limits) && "+f.gpuResources+".exists(r, r in c.resources.limits)) || (has(c.resources.requests) && "+f.gpuResources+".exists(r, r in c.resources.requests))))"),
		v("toleratesGPU", tolerates(f.gpuTaints)),
		v("toleratesSystem", tolerates(f.systemTaints)),
		v("poolLabels", f.pools["poolLabels"]),
		v("poolZones", f.pools["poolZones"]),
		v("poolHosts", f.pools["poolHosts"]),
		v("poolInts", f.pools["poolInts"]),
		v("openPools", openPools(f.shapes)),
		v("selectsGPUPool", confinedTo(f.shapes, f.gpuIdx)),
		v("selectsSystemPool", confinedTo(f.shapes, f.systemIdx)),
		v("isSystemNS", "variables.ns in "+f.systemNS),
		v("priorityClass", "has(variables.spec.priorityClassName) ? variables.spec.priorityClassName : ''"),
		v("priority", "has(variables.spec.priority) ? variables.spec.priority : 0"),
		v("ceiling", "variables.ns in "+f.ceilings+" ? "+f.ceilings+"[variables.ns] : "+fmt.Sprint(f.defaultPriority)),
		v("allowedClasses", "variables.ns in "+f.teamClasses+" ? "+f.teamClasses+"[variables.ns] : "+f.otherClasses),
	}
}

// changed is a CEL expression: the pod's spec.FIELD differs from the old
// pod's. Kubernetes lets an update add tolerations, and add node
// selectors and affinity to a pod that still has scheduling gates.
func changed(field string) string {
	n, o := "object.spec."+field, "oldObject.spec."+field
	return "has(" + n + ") != has(" + o + ") || (has(" + n + ") && " + n + " != " + o + ")"
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

// rules are the validations of each rule ID, for the objects at spec.
func rules(f *facts, workload bool) map[string][]rule {
	what := "this pod"
	if workload {
		what = "this workload's pod template"
	}
	or := func(list, none string) string {
		return "(size(" + list + ") == 0 ? '" + none + "' : " + list + ".join(', '))"
	}
	inTeam := "variables.ns in " + f.teamClasses
	classPCs := celStringMap(f.classPCs)
	bare := ""
	if !workload {
		bare = ". A pod created directly cannot be given its class's priority on admission (priority is settled before mutation); a Deployment, StatefulSet, Job or CronJob of the class gets it by itself"
	}
	return map[string][]rule{
		v1alpha1.RuleGPULimit: {{
			expr: "!('" + v1alpha1.AnnotationGPULimitMissing + "' in variables.podAnnotations)",
			what: []part{text("container "), cel("variables.podAnnotations['" + v1alpha1.AnnotationGPULimitMissing + "']"),
				text(" asks for GPUs in resources.requests without a limit. GPUs are whole devices and are not shared, so a GPU must be a limit")},
			fix: FixGPULimit}},
		v1alpha1.RuleGPUWithoutGPU: {{
			expr: "variables.isSystemNS || !(variables.toleratesGPU || variables.selectsGPUPool) || size(variables.gpuContainers) > 0",
			what: []part{text(what + " tolerates a GPU pool's taint or selects only GPU pools (" + listText(f.gpuPools) + ") but no container asks for a GPU, so it would hold a GPU node without using it")},
			fix:  FixGPUWithoutGPU}},
		v1alpha1.RuleGPUNamespace: {{
			expr: "variables.isSystemNS || !(variables.toleratesGPU || variables.selectsGPUPool) || variables.ns in " + f.gpuNamespaces,
			what: []part{text("namespace "), cel("variables.ns"),
				text(" has no GPU quota, so it may not tolerate the GPU pools' taints or select them (" + listText(f.gpuPools) + ", by any label or node name); namespaces with GPUs: " + listText(f.gpuNamespaces))},
			fix: "run it in one of those, or give the team a quota.gpu in the blueprint."}},
		// The policy refuses a selection of the System pools too, which
		// audit does not check: its fix says so after the shared one.
		v1alpha1.RuleSystemPool: {{
			expr: "variables.isSystemNS || !(variables.toleratesSystem || variables.selectsSystemPool)",
			what: []part{text(what + " tolerates the System pools' taints or selects only System pools (" + listText(f.systemPools) + ", by any label or node name), which only system namespaces (" + listText(f.systemNS) + ") may do")},
			fix:  FixSystemPool + " Drop any node selection of the System pools too."}},
		v1alpha1.RuleNodeName: {{
			expr: "variables.isSystemNS || !has(variables.spec.nodeName) || variables.spec.nodeName == ''",
			what: []part{text(what + " sets spec.nodeName, which skips the scheduler and every taint, quota and priority check; only system namespaces (" + listText(f.systemNS) + ") may")},
			fix:  "remove spec.nodeName and select the pool with nodeSelector " + v1alpha1.LabelPool + "."}},
		// Pods: a team namespace's pods name only the team's classes
		// (the ceiling below holds every namespace to a number).
		// Templates: every namespace but the system ones names only the
		// classes its ceiling allows; the number is not known yet.
		v1alpha1.RulePriorityClass: {{
			expr: func() string {
				if workload {
					return "variables.isSystemNS || variables.priorityClass == '' || variables.priorityClass in variables.allowedClasses"
				}
				return "!(" + inTeam + ") || variables.priorityClass == '' || variables.priorityClass in " + f.teamClasses + "[variables.ns]"
			}(),
			what: []part{text("namespace "), cel("variables.ns"), text(" may not use priorityClassName "), cel("variables.priorityClass"),
				cel("(" + inTeam + " ? ('; its team may use '+" + or("variables.allowedClasses", "none") + "+' (priority at most '+string(variables.ceiling)+')') : ('; it is outside the blueprint, so it runs at most at the default priority '+string(variables.ceiling)+' and may name '+" + or("variables.allowedClasses", "no class") + "))"),
				text(". System classes (" + strings.Join(systemPriorityClasses, ", ") + ") are for system namespaces (" + listText(f.systemNS) + ")")},
			fix: "use one of those, or run it in a team namespace whose team may use the class (the team's classes in the blueprint)."}},
		// Two validations, one for team namespaces and one for the rest,
		// so that each gives its own fix.
		v1alpha1.RulePriorityCeiling: {{
			expr: "variables.isSystemNS || !(" + inTeam + ") || variables.priority <= variables.ceiling",
			what: []part{text("namespace "), cel("variables.ns"), text(" runs at most at priority "), cel("string(variables.ceiling)"),
				text(" (the highest class its team may use: "), cel(or("variables.allowedClasses", "none")),
				text("), but priorityClassName "), cel("variables.priorityClass"), text(" gives this pod priority "), cel("string(variables.priority)")},
			fix: "use one of its team's classes, or add the class to the team in the blueprint.",
		}, {
			expr: "variables.isSystemNS || " + inTeam + " || variables.priority <= variables.ceiling",
			what: []part{text("namespace "), cel("variables.ns"), text(" runs at most at priority "), cel("string(variables.ceiling)"),
				text(" (the priority of a pod that names no class: namespaces outside the blueprint run no higher), but priorityClassName "),
				cel("variables.priorityClass"), text(" gives this pod priority "), cel("string(variables.priority)")},
			fix: "drop priorityClassName, or run it in a team namespace whose team may use the class; system classes are for system namespaces (" + listText(f.systemNS) + ").",
		}},
		v1alpha1.RulePriorityValue: {{
			expr: "!has(variables.spec.priority)",
			what: []part{text(what + " sets spec.priority to a number; priority comes only from a PriorityClass")},
			fix:  "remove spec.priority and set spec.priorityClassName."}},
		v1alpha1.RuleClassPreemption: {{
			expr: "!(variables.classLabel in " + f.neverClasses + ") || (has(variables.spec.preemptionPolicy) && variables.spec.preemptionPolicy == 'Never')",
			what: []part{text("pods of class "), cel("variables.classLabel"),
				text(" run at priorityClassName "), cel(celStringMap(f.neverPCs) + "[variables.classLabel]"),
				text(", with preemptionPolicy Never, so that they wait for room rather than evict anything; this pod has "),
				cel("(has(variables.spec.preemptionPolicy) ? variables.spec.preemptionPolicy : 'none')")},
			fix: "set its class's priorityClassName, which carries preemptionPolicy Never."}},
		// The class label and the priority class say the same thing, in
		// both directions: a class's pods run at its priority, and a pod
		// at a class's priority is of that class (the class policies
		// give it the label when it has none), so that leaving the label
		// off exempts no pod from its class's placement, isolation and
		// budget.
		v1alpha1.RuleClassPriority: {{
			expr: "(variables.classLabel in " + classPCs + " ? variables.priorityClass == " + classPCs + "[variables.classLabel] : true) && (variables.priorityClass in " + f.pcClass + " ? variables.classLabel == " + f.pcClass + "[variables.priorityClass] : true)",
			what: []part{text(what + " has class label " + v1alpha1.LabelClass + "="), cel("(variables.classLabel == '' ? '(none)' : variables.classLabel)"),
				text(" and priorityClassName "), cel("(variables.priorityClass == '' ? '(none)' : variables.priorityClass)"),
				cel("(variables.classLabel in " + classPCs + " ? '; pods of class '+variables.classLabel+' run at priorityClassName '+" + classPCs + "[variables.classLabel] : '; priorityClassName '+variables.priorityClass+' is class '+" + f.pcClass + "[variables.priorityClass]+'\\'s')"),
				text(bare)},
			fix: "make the class label and spec.priorityClassName name the same class."}},
	}
}

// lit is text as a CEL string literal.
func lit(s string) string { return strconv.Quote(s) }

func podPolicy(bp *v1alpha1.Blueprint, f *facts, name, pod string, ids []string, pods bool) *admissionv1.ValidatingAdmissionPolicy {
	all := rules(f, !pods)
	var validations []admissionv1.Validation
	for _, id := range ids {
		for _, r := range all[id] {
			validations = append(validations, admissionv1.Validation{Expression: r.expr, MessageExpression: messageExpression(id, r.what, r.fix), Reason: ptrTo(metav1.StatusReasonForbidden)})
		}
	}
	resources := []admissionv1.NamedRuleWithOperations{}
	switch name {
	case PodPolicy:
		resources = append(resources, ruleFor("", "v1", "pods"))
		// A running pod is updated by controllers all the time; only a
		// new pod, or an update that changes where it may run
		// (tolerations, or a gated pod's node selection), is checked.
		// This is a guard on each validation rather than a match
		// condition, which would build a second CEL view of every pod.
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
			Variables:        podVariables(f, pod, pods),
			Validations:      validations,
		},
	}
}

// priorityClassPolicy refuses a new default PriorityClass above the
// blueprint's default priority: every pod that names no class would get
// it, and namespaces outside the blueprint run no higher than that.
func priorityClassPolicy(bp *v1alpha1.Blueprint, f *facts) *admissionv1.ValidatingAdmissionPolicy {
	d := fmt.Sprint(f.defaultPriority)
	msg := messageExpression(v1alpha1.RuleGlobalDefault, []part{
		text("PriorityClass "), cel("object.metadata.name"), text(" would be the default for every pod that names no class, at priority "), cel("string(object.value)"),
		text(", above " + d + ", the ceiling of every namespace outside the blueprint " + bp.Metadata.Name + " (and the lowest a class may sit); its pods would be refused or run above their station"),
	}, FixGlobalDefault)
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "ValidatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", PriorityPolicy, nil),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				ruleFor("scheduling.k8s.io", "v1", "priorityclasses"),
			}},
			Validations: []admissionv1.Validation{{
				Expression:        "!(has(object.globalDefault) && object.globalDefault) || object.value <= " + d,
				MessageExpression: msg,
				Reason:            ptrTo(metav1.StatusReasonForbidden),
			}},
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
	old := "(request.operation == 'UPDATE' && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})"
	team, blueprint := strconv.Quote(v1alpha1.LabelTeam), strconv.Quote(v1alpha1.LabelBlueprint)
	// A blueprint's namespace carries berth's labels exactly as berth set
	// them, once it has them; before the first apply it may be created
	// bare, and apply adopts it. Any other namespace may not claim one of
	// the blueprint's teams, whether it is created with the label or
	// given it later.
	expr := "object.metadata.name in " + mine +
		" ? ((" + team + " in " + labels + " || " + team + " in " + old + ") ? (" + team + " in " + labels + " && " + labels + "[" + team + "] == " + mine + "[object.metadata.name][0] && " + blueprint + " in " + labels + " && " + labels + "[" + blueprint + "] == " + strconv.Quote(bp.Metadata.Name) + ") : true)" +
		" : !(" + team + " in " + labels + " && " + labels + "[" + team + "] in " + celList(teamNames(bp)) + ")"
	msg := messageExpression(v1alpha1.RuleNamespaceLabels,
		[]part{text("the labels " + v1alpha1.LabelTeam + " and " + v1alpha1.LabelBlueprint + " say which team a namespace belongs to; only the blueprint " + bp.Metadata.Name + " changes them")},
		"change the team in the blueprint and run berth apply.")
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "ValidatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", NamespacePolicy, nil),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression:        expr,
				MessageExpression: msg,
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
func celMap(m map[string][]string) string { return celMapOf(m, celList) }

// celIntMap writes a map of integers as a CEL map literal, keys sorted.
func celIntMap(m map[string]int32) string {
	return celMapOf(m, func(v int32) string { return strconv.Itoa(int(v)) })
}

// celStringMap writes a map of strings as a CEL map literal, keys sorted.
func celStringMap(m map[string]string) string { return celMapOf(m, strconv.Quote) }

// celMapOf writes m as a CEL map literal, keys sorted, each value as
// value writes it.
func celMapOf[V any](m map[string]V, value func(V) string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.Quote(k) + ": " + value(m[k])
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
