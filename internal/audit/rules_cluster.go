package audit

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/words"
)

// inferenceWindow is the shortest scale-down stabilization window for GPU
// inference: the HPA's own default.
const inferenceWindow = 300

// checkInference: a disruption budget, zone spread, and more than one
// replica.
func (v *view) checkInference(w *workload) {
	if w.replicas == nil {
		return
	}
	if !v.budgeted(w) {
		v.add(v1alpha1.RuleInferencePDB, w.obj, "",
			"no PodDisruptionBudget selects its pods, so a drain or pool upgrade may evict every replica at once",
			fmt.Sprintf("add a PodDisruptionBudget in %s selecting %s with minAvailable below the replica count (berth: a class with disruption)", w.obj.Namespace, selectorText(w.labels)))
	}
	min := *w.replicas
	if hpa := v.hpaFor(w); hpa != nil && hpa.Spec.MinReplicas != nil && *hpa.Spec.MinReplicas > min {
		min = *hpa.Spec.MinReplicas
	}
	if w.obj.Kind == "Deployment" && min <= 1 {
		v.add(v1alpha1.RuleInferenceReplicas, w.obj, "spec.replicas",
			fmt.Sprintf("runs %d replica, so every rollout, drain or node failure is an outage", min),
			"set spec.replicas to 2 or more (or an HPA with minReplicas 2)")
	}
	if v.zones != 1 && !spreadsZones(w) {
		v.add(v1alpha1.RuleInferenceSpread, w.obj, w.path+".topologySpreadConstraints",
			"no topology spread constraint or anti-affinity on topology.kubernetes.io/zone, so its replicas may share a zone and go down with it",
			"add a topologySpreadConstraint with topologyKey topology.kubernetes.io/zone and maxSkew 1 (berth: a class with spread: zone)")
	}
	v.checkZoneFailover(w)
}

// checkZoneFailover: a DoNotSchedule zone constraint that keeps counting
// a dead zone, so replacements wait for it to come back.
func (v *view) checkZoneFailover(w *workload) {
	for i, c := range w.spec.TopologySpreadConstraints {
		if c.TopologyKey != corev1.LabelTopologyZone || c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		field := fmt.Sprintf("%s.topologySpreadConstraints[%d]", w.path, i)
		switch {
		case c.NodeTaintsPolicy == nil || *c.NodeTaintsPolicy != corev1.NodeInclusionPolicyHonor:
			v.add(v1alpha1.RuleZoneFailover, w.obj, field+".nodeTaintsPolicy",
				"its zone spread counts tainted nodes (nodeTaintsPolicy Ignore, the default), so when a zone dies the replacements of its replicas violate maxSkew everywhere and stay Pending until it returns",
				"set nodeTaintsPolicy: Honor on the constraint (berth's zone-spread classes do)")
		case c.MinDomains != nil && v.zones > 1 && int(*c.MinDomains) >= v.zones:
			v.add(v1alpha1.RuleZoneFailover, w.obj, field+".minDomains",
				fmt.Sprintf("minDomains %d asks for every zone, so with one zone down the global minimum counts as 0 and replacements stay Pending", *c.MinDomains),
				fmt.Sprintf("leave minDomains unset or below %d", v.zones))
		}
	}
}

func spreadsZones(w *workload) bool {
	for _, c := range w.spec.TopologySpreadConstraints {
		if c.TopologyKey == corev1.LabelTopologyZone || c.TopologyKey == corev1.LabelFailureDomainBetaZone {
			return true
		}
	}
	if a := w.spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == corev1.LabelTopologyZone {
				return true
			}
		}
		for _, t := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if t.PodAffinityTerm.TopologyKey == corev1.LabelTopologyZone {
				return true
			}
		}
	}
	return false
}

// checkNamespaces: namespaces running workloads have a GPU quota when
// they use GPUs, and a LimitRange.
func (v *view) checkNamespaces() {
	quotaGPU := map[string]bool{}
	for ns, quotas := range v.quotas {
		for _, q := range quotas {
			for r := range q.Spec.Hard {
				if strings.HasPrefix(string(r), "requests.") && isGPUResource(r[len("requests."):]) {
					quotaGPU[ns] = true
				}
			}
		}
	}
	names := make([]string, 0, len(v.byNS))
	for ns := range v.byNS {
		names = append(names, ns)
	}
	// Namespaces whose quota is audited, though they run nothing audited.
	quoted := map[string]bool{}
	for i := range v.inv.ResourceQuotas {
		if ns := v.inv.ResourceQuotas[i].Namespace; v.byNS[ns] == nil && !quoted[ns] {
			quoted[ns] = true
			names = append(names, ns)
		}
	}
	sort.Strings(names)
	for _, ns := range names {
		if ns == "" || v.system[ns] {
			continue
		}
		obj := Object{Kind: "Namespace", Name: ns}
		var gpu []string
		for _, w := range v.byNS[ns] {
			if w.gpu {
				gpu = append(gpu, w.obj.Kind+" "+w.obj.Name)
			}
		}
		if len(gpu) > 0 && !quotaGPU[ns] {
			v.add(v1alpha1.RuleGPUQuotaMissing, obj, "",
				fmt.Sprintf("runs %d GPU workload(s) (%s) but no ResourceQuota caps requests.nvidia.com/gpu, so it can take every GPU in the cluster", len(gpu), words.List(gpu, 3)),
				fmt.Sprintf("add a ResourceQuota in %s with hard requests.nvidia.com/gpu (berth: the team's quota.gpu)", ns))
		}
		if !v.limitRanges[ns] {
			v.add(v1alpha1.RuleLimitRangeMissing, obj, "",
				"has no LimitRange, so containers that set no requests are scheduled as if free and escape the CPU and memory quota",
				fmt.Sprintf("add a LimitRange in %s with container defaults (berth: a team's defaults)", ns))
		}
	}
}

// checkQuotas: GPUs are quoted as requests.nvidia.com/gpu.
func (v *view) checkQuotas() {
	for i := range v.inv.ResourceQuotas {
		q := &v.inv.ResourceQuotas[i]
		keys := make([]string, 0, len(q.Spec.Hard))
		for r := range q.Spec.Hard {
			keys = append(keys, string(r))
		}
		sort.Strings(keys)
		for _, r := range keys {
			bare := strings.TrimPrefix(r, "limits.")
			if !isGPUResource(corev1.ResourceName(bare)) {
				continue
			}
			v.add(v1alpha1.RuleGPUQuotaKey, Object{Kind: "ResourceQuota", Namespace: q.Namespace, Name: q.Name}, fmt.Sprintf("spec.hard[%q]", r),
				fmt.Sprintf("quota key %s is accepted but never enforced: the quota system counts extended resources only as requests.%s", r, bare),
				fmt.Sprintf("rename the key to requests.%s", bare))
		}
	}
}

// checkLimitRanges: GPUs are never defaulted, directly or through a max.
func (v *view) checkLimitRanges() {
	for i := range v.inv.LimitRanges {
		lr := &v.inv.LimitRanges[i]
		obj := Object{Kind: "LimitRange", Namespace: lr.Namespace, Name: lr.Name}
		for j, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer && item.Type != "" {
				continue
			}
			defaulted := map[corev1.ResourceName]bool{}
			for field, list := range map[string]corev1.ResourceList{"default": item.Default, "defaultRequest": item.DefaultRequest} {
				for _, r := range sortedResources(list) {
					if isGPUResource(r) {
						defaulted[r] = true
						v.add(v1alpha1.RuleLimitRangeGPUDefault, obj, fmt.Sprintf("spec.limits[%d].%s[%q]", j, field, r),
							fmt.Sprintf("%s %s gives every container that names no GPU %s of them, sidecars and CPU jobs included", field, r, quantity(list, r)),
							fmt.Sprintf("remove %s from %s; GPUs are asked for explicitly", r, field))
					}
				}
			}
			for _, r := range sortedResources(item.Max) {
				if isGPUResource(r) && !defaulted[r] {
					v.add(v1alpha1.RuleLimitRangeGPUMax, obj, fmt.Sprintf("spec.limits[%d].max[%q]", j, r),
						fmt.Sprintf("max %s %s with no default: Kubernetes copies the max into the default, so every container silently gets %s GPU(s)", r, quantity(item.Max, r), quantity(item.Max, r)),
						fmt.Sprintf("remove the %s max (the quota caps GPUs per namespace), or also set default[%q] to 0", r, r))
				}
			}
		}
	}
}

func quantity(list corev1.ResourceList, r corev1.ResourceName) string {
	q := list[r]
	return q.String()
}

func sortedResources(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for r := range list {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// classBudgets are, by namespace, the classes named in its
// berth.io/budgets annotation.
func classBudgets(invs ...*Inventory) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, inv := range invs {
		for i := range inv.Namespaces {
			ns := &inv.Namespaces[i]
			var b compile.Budgets
			if json.Unmarshal([]byte(ns.Annotations[v1alpha1.AnnotationBudgets]), &b) != nil {
				continue
			}
			for class := range b {
				if out[ns.Name] == nil {
					out[ns.Name] = map[string]bool{}
				}
				out[ns.Name][class] = true
			}
		}
	}
	return out
}

// budgetSelectors are each namespace's PDB selectors, worked out once:
// the PDB rules ask of every inference workload.
func budgetSelectors(invs ...*Inventory) map[string][]labels.Selector {
	out := map[string][]labels.Selector{}
	for _, inv := range invs {
		for i := range inv.PDBs {
			p := &inv.PDBs[i]
			if sel := pdbSelector(p.Spec.Selector); sel != nil {
				out[p.Namespace] = append(out[p.Namespace], sel)
			}
		}
	}
	return out
}

// pdbSelector is a PDB's selector, or nil for one that selects nothing
// (absent, empty or invalid).
func pdbSelector(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil || sel.Empty() {
		return nil
	}
	return sel
}

// budgeted reports whether a PDB in the workload's namespace selects its
// pods, or berth gives it one: a Deployment or StatefulSet of a class
// with a disruption budget in its namespace's berth.io/budgets.
func (v *view) budgeted(w *workload) bool {
	if (w.obj.Kind == "Deployment" || w.obj.Kind == "StatefulSet") && v.classBudgets[w.obj.Namespace][w.labels[v1alpha1.LabelClass]] {
		return true
	}
	for _, sel := range v.budgets[w.obj.Namespace] {
		if sel.Matches(labels.Set(w.labels)) {
			return true
		}
	}
	return false
}

// checkPDBs: a budget protects one workload, and allows at least one
// eviction.
func (v *view) checkPDBs() {
	for i := range v.inv.PDBs {
		p := &v.inv.PDBs[i]
		obj := Object{Kind: "PodDisruptionBudget", Namespace: p.Namespace, Name: p.Name}
		if n, names := v.workloadsUnder(p.Namespace, p.Spec.Selector); n > 1 {
			v.add(v1alpha1.RulePDBSpansWorkloads, obj, "spec.selector",
				fmt.Sprintf("the selector takes the pods of %d workloads%s together, so a drain may evict every replica of one while the others keep the budget's minimum", n, names),
				"give each workload its own budget, selecting only its pods (its own selector)")
		}
		if m := p.Spec.MaxUnavailable; m != nil && (m.String() == "0" || m.String() == "0%") {
			v.add(v1alpha1.RulePDBBlocksDrain, obj, "spec.maxUnavailable",
				"maxUnavailable is 0, so no pod it covers may ever be evicted: every drain, upgrade and scale-down stalls",
				"set maxUnavailable to 1 (or a percentage above 0)")
			continue
		}
		m := p.Spec.MinAvailable
		if m == nil {
			continue
		}
		if m.Type == intstr.String {
			if m.StrVal == "100%" {
				v.add(v1alpha1.RulePDBBlocksDrain, obj, "spec.minAvailable",
					"minAvailable is 100%, so no pod it covers may ever be evicted: every drain, upgrade and scale-down stalls",
					"set minAvailable below 100%, or use maxUnavailable: 1")
			}
			continue
		}
		replicas, names := v.replicasUnder(p.Namespace, p.Spec.Selector)
		if p.Status.ExpectedPods > 0 && replicas == 0 {
			replicas = p.Status.ExpectedPods
		}
		if replicas > 0 && m.IntVal >= replicas {
			v.add(v1alpha1.RulePDBBlocksDrain, obj, "spec.minAvailable",
				fmt.Sprintf("minAvailable %d with %d replica(s)%s, so no pod may ever be evicted: every drain, upgrade and scale-down stalls", m.IntVal, replicas, names),
				fmt.Sprintf("set minAvailable to %d or less, or use maxUnavailable: 1", replicas-1))
		}
	}
}

// workloadsUnder counts the replicated workloads (Deployments,
// StatefulSets, ReplicaSets) whose pods a selector covers.
func (v *view) workloadsUnder(ns string, s *metav1.LabelSelector) (int, string) {
	sel := pdbSelector(s)
	if sel == nil {
		return 0, ""
	}
	var names []string
	for _, w := range v.byNS[ns] {
		if w.replicas != nil && sel.Matches(labels.Set(w.labels)) {
			names = append(names, w.obj.Kind+" "+w.obj.Name)
		}
	}
	if len(names) == 0 {
		return 0, ""
	}
	return len(names), " (" + strings.Join(names, ", ") + ")"
}

// replicasUnder sums the replicas of the workloads a selector covers.
func (v *view) replicasUnder(ns string, s *metav1.LabelSelector) (int32, string) {
	sel := pdbSelector(s)
	if sel == nil {
		return 0, ""
	}
	var n int32
	var names []string
	for _, w := range v.byNS[ns] {
		if w.replicas != nil && sel.Matches(labels.Set(w.labels)) {
			n += *w.replicas
			names = append(names, w.obj.Kind+" "+w.obj.Name)
		}
	}
	if len(names) == 0 {
		return 0, ""
	}
	return n, " (" + strings.Join(names, ", ") + ")"
}

// checkGuardrailMode: berth's guardrails refuse, rather than warn. One
// finding per blueprint, on its pod policy's binding (the one that holds
// pods to their namespace's station) or else its first.
func (v *view) checkGuardrailMode() {
	seen := map[string]bool{}
	bindings := append([]admissionv1.ValidatingAdmissionPolicyBinding(nil), v.inv.PolicyBindings...)
	sort.SliceStable(bindings, func(i, j int) bool {
		return bindings[i].Spec.PolicyName == compile.PodPolicy && bindings[j].Spec.PolicyName != compile.PodPolicy
	})
	for _, b := range bindings {
		bp := b.Labels[v1alpha1.LabelBlueprint]
		if b.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy || bp == "" || seen[bp] || slices.Contains(b.Spec.ValidationActions, admissionv1.Deny) {
			continue
		}
		seen[bp] = true
		v.add(v1alpha1.RuleGuardrailsNotEnforced, Object{Kind: "ValidatingAdmissionPolicyBinding", Name: b.Name}, "spec.validationActions",
			fmt.Sprintf("blueprint %s's guardrails run with validationActions %v, so what breaks the design is admitted: namespaces outside the blueprint may run at any priority (system-cluster-critical included), GPU tolerations come in from namespaces without GPUs, pods reach the System pool; only quotas still refuse (each team's class quota refuses the classes it may not use and the system classes)", bp, b.Spec.ValidationActions),
			"set spec.guardrails: Enforce in the blueprint and run berth apply")
	}
}

// checkPriorityClasses: the global default is not a high priority.
func (v *view) checkPriorityClasses() {
	if pc := v.defaultPC; pc != nil && v.highDefault() {
		v.add(v1alpha1.RuleGlobalDefault, Object{Kind: "PriorityClass", Name: pc.Name}, "globalDefault",
			fmt.Sprintf("PriorityClass %s (value %d) is the global default, so every pod that names no class runs at that priority and may preempt inference and training", pc.Name, pc.Value),
			"set globalDefault: false here and make the lowest class the default, or none")
	}
}

// highDefault reports whether the global default PriorityClass is a high
// one: berth's high level or above, or the highest of several.
func (v *view) highDefault() bool {
	pc := v.defaultPC
	if pc == nil {
		return false
	}
	highest, users := true, 0
	for _, o := range v.pcs {
		if o.Value >= 1_000_000_000 || strings.HasPrefix(o.Name, "system-") {
			continue // the system classes
		}
		users++
		if o.Value > pc.Value {
			highest = false
		}
	}
	return pc.Value >= 100000 || (highest && users > 1)
}

// hpaFor is the HPA that scales the workload, if audited.
func (v *view) hpaFor(w *workload) *autoscalingv2.HorizontalPodAutoscaler {
	for i := range v.inv.HPAs {
		h := &v.inv.HPAs[i]
		if h.Namespace == w.obj.Namespace && h.Spec.ScaleTargetRef.Kind == w.obj.Kind && h.Spec.ScaleTargetRef.Name == w.obj.Name {
			return h
		}
	}
	return nil
}

// checkHPAs: GPU inference scales down slowly.
func (v *view) checkHPAs() {
	for i := range v.inv.HPAs {
		h := &v.inv.HPAs[i]
		b := h.Spec.Behavior
		if b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil || *b.ScaleDown.StabilizationWindowSeconds >= inferenceWindow {
			continue
		}
		var target *workload
		for _, w := range v.byNS[h.Namespace] {
			if w.obj.Kind == h.Spec.ScaleTargetRef.Kind && w.obj.Name == h.Spec.ScaleTargetRef.Name {
				target = w
			}
		}
		if target == nil || !target.gpu || target.role() != inference {
			continue
		}
		v.add(v1alpha1.RuleHPAScaleDown, Object{Kind: "HorizontalPodAutoscaler", Namespace: h.Namespace, Name: h.Name}, "spec.behavior.scaleDown.stabilizationWindowSeconds",
			fmt.Sprintf("scales GPU inference %s %s down after %ds; a GPU replica takes minutes to start and load its model, so bursts pay that again", target.obj.Kind, target.obj.Name, *b.ScaleDown.StabilizationWindowSeconds),
			fmt.Sprintf("set stabilizationWindowSeconds to %d or more, or leave it unset (the default is %d)", inferenceWindow, inferenceWindow))
	}
}

// selectorText writes labels as a selector: "app=web,tier=api".
func selectorText(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%s", k, l[k])
	}
	if len(parts) == 0 {
		return "its pods"
	}
	return strings.Join(parts, ",")
}
