// Package compile turns a blueprint into the Kubernetes objects that make
// it true on a cluster: per team a Namespace, a ResourceQuota and a
// LimitRange; per class a PriorityClass and, where the class has a
// disruption budget, the budget each of its workloads gets in each team
// namespace (an annotation on the namespace, read by internal/budgets);
// and,
// where a team may use only some classes, a priority-scoped quota that
// refuses the others.
//
// Unless the blueprint turns them off, it also compiles the guardrails:
// ValidatingAdmissionPolicies that hold every workload to the design
// (guardrails.go).
//
// Compile is pure: the same blueprint gives the same objects, in the order
// they must be applied. Node pools are not objects here; see
// internal/pools.
package compile

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"berth.io/berth/api/v1alpha1"
)

// Names of the per-namespace objects.
const (
	QuotaName      = "team-quota"
	ClassQuotaName = "team-classes"
	LimitRangeName = "team-defaults"
)

// Priority values of the three levels. System-critical classes sit far
// above (2,000,000,000); pods with no class have 0.
var priorityValues = map[v1alpha1.PriorityLevel]int32{
	v1alpha1.PriorityHigh:   100000,
	v1alpha1.PriorityMedium: 10000,
	v1alpha1.PriorityLow:    1000,
}

// Object is a compiled object with its kind set, ready to apply.
type Object interface {
	metav1.Object
	runtime.Object
}

// Objects compiles a defaulted, valid blueprint. Cluster-scoped objects
// and namespaces come first, then what lives in the namespaces, so that
// applying them in order never refers to something not yet there.
func Objects(bp *v1alpha1.Blueprint) []Object {
	var out []Object
	for i := range bp.Spec.Teams {
		for _, ns := range bp.Spec.Teams[i].Namespaces {
			out = append(out, namespace(bp, &bp.Spec.Teams[i], ns))
		}
	}
	for i := range bp.Spec.Classes {
		if pc := priorityClass(bp, &bp.Spec.Classes[i]); pc != nil {
			out = append(out, pc)
		}
	}
	for i := range bp.Spec.Teams {
		t := &bp.Spec.Teams[i]
		for _, ns := range t.Namespaces {
			if q := quota(bp, t, ns); q != nil {
				out = append(out, q)
			}
			if q := classQuota(bp, t, ns); q != nil {
				out = append(out, q)
			}
			out = append(out, limitRange(bp, t, ns))
		}
	}
	out = append(out, kueueObjects(bp)...)
	out = append(out, guardrails(bp)...)
	out = append(out, classPolicies(bp)...)
	out = append(out, queueGuardrails(bp)...)
	return append(out, modelPolicies(bp)...)
}

// Labels are the ownership labels of a blueprint's objects.
func Labels(bp *v1alpha1.Blueprint) map[string]string {
	return map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelBlueprint: bp.Metadata.Name}
}

// Selector selects a blueprint's objects by their ownership labels.
func Selector(blueprint string) string {
	return v1alpha1.LabelManagedBy + "=" + v1alpha1.ManagedBy + "," + v1alpha1.LabelBlueprint + "=" + blueprint
}

func meta(bp *v1alpha1.Blueprint, ns, name string, extra map[string]string) metav1.ObjectMeta {
	labels := Labels(bp)
	for k, v := range extra {
		labels[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
}

func typeMeta(gv schema.GroupVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gv.String(), Kind: kind}
}

func namespace(bp *v1alpha1.Blueprint, t *v1alpha1.Team, name string) *corev1.Namespace {
	ns := &corev1.Namespace{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion, "Namespace"),
		ObjectMeta: meta(bp, "", name, map[string]string{v1alpha1.LabelTeam: t.Name}),
	}
	if b := budgets(bp); b != "" {
		ns.Annotations = map[string]string{v1alpha1.AnnotationBudgets: b}
	}
	return ns
}

func priorityClass(bp *v1alpha1.Blueprint, c *v1alpha1.Class) *schedulingv1.PriorityClass {
	name := c.PriorityClassName()
	if name == "" {
		return nil
	}
	preemption := corev1.PreemptionPolicy(c.Preemption)
	return &schedulingv1.PriorityClass{
		TypeMeta:         typeMeta(schedulingv1.SchemeGroupVersion, "PriorityClass"),
		ObjectMeta:       meta(bp, "", name, map[string]string{v1alpha1.LabelClass: c.Name}),
		Value:            priorityValues[c.Priority],
		GlobalDefault:    c.GlobalDefault,
		PreemptionPolicy: &preemption,
		Description:      fmt.Sprintf("berth class %s (%s priority) of blueprint %s: runs on pools %s.", c.Name, c.Priority, bp.Metadata.Name, strings.Join(c.Pools, ", ")),
	}
}

// quota is the team's ResourceQuota. GPUs are counted as
// requests.<resource>: the quota system ignores a bare nvidia.com/gpu key
// for extended resources.
func quota(bp *v1alpha1.Blueprint, t *v1alpha1.Team, ns string) *corev1.ResourceQuota {
	q := t.Quota
	if q == nil {
		return nil
	}
	hard := corev1.ResourceList{}
	if q.GPU != nil {
		for _, r := range gpuResources(bp) {
			hard[corev1.ResourceName("requests."+r)] = q.GPU.DeepCopy()
		}
	}
	set := func(name corev1.ResourceName, v *resource.Quantity) {
		if v != nil {
			hard[name] = v.DeepCopy()
		}
	}
	set(corev1.ResourcePods, q.Pods)
	if bp.Spec.UsesKueue() {
		// Kueue counts CPU, memory and GPUs (kueue.go); a ResourceQuota
		// on them would refuse the pods of what Kueue admitted, and
		// borrowed GPUs always. It keeps what Kueue does not count.
		delete(hard, corev1.ResourceName("requests."+v1alpha1.DefaultGPUResource))
	} else {
		set(corev1.ResourceRequestsCPU, q.CPU)
		set(corev1.ResourceRequestsMemory, q.Memory)
	}
	if len(hard) == 0 {
		return nil
	}
	return &corev1.ResourceQuota{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion, "ResourceQuota"),
		ObjectMeta: meta(bp, ns, QuotaName, map[string]string{v1alpha1.LabelTeam: t.Name}),
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
}

// gpuResources are the extended resources the pools' GPUs are advertised
// as, or nvidia.com/gpu when no pool has GPUs.
func gpuResources(bp *v1alpha1.Blueprint) []string {
	seen := map[string]bool{}
	for i := range bp.Spec.Pools {
		if r := bp.Spec.Pools[i].GPUResource(); r != "" {
			seen[r] = true
		}
	}
	if len(seen) == 0 {
		return []string{v1alpha1.DefaultGPUResource}
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// classQuota refuses, natively, pods of the priority classes a team may
// not use, and of the system classes: a quota of zero pods scoped to
// those classes. Unlike the guardrails it holds whatever the guardrails'
// mode, so a team cannot run above its station even under Warn or Audit.
func classQuota(bp *v1alpha1.Blueprint, t *v1alpha1.Team, ns string) *corev1.ResourceQuota {
	allowed := map[string]bool{}
	for _, c := range t.Classes {
		allowed[c] = true
	}
	denied := append([]string(nil), systemPriorityClasses...)
	for i := range bp.Spec.Classes {
		c := &bp.Spec.Classes[i]
		if pc := c.PriorityClassName(); pc != "" && len(t.Classes) > 0 && !allowed[c.Name] {
			denied = append(denied, pc)
		}
	}
	return &corev1.ResourceQuota{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion, "ResourceQuota"),
		ObjectMeta: meta(bp, ns, ClassQuotaName, map[string]string{v1alpha1.LabelTeam: t.Name}),
		Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
				ScopeName: corev1.ResourceQuotaScopePriorityClass,
				Operator:  corev1.ScopeSelectorOpIn,
				Values:    denied,
			}}},
		},
	}
}

// limitRange gives containers that name no resources the team's defaults,
// so that quotas count them, and caps what one container may ask for. It
// never defaults GPUs: a default GPU limit would hand GPUs to every
// container in the namespace.
func limitRange(bp *v1alpha1.Blueprint, t *v1alpha1.Team, ns string) *corev1.LimitRange {
	d := t.Defaults
	item := corev1.LimitRangeItem{
		Type:           corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{},
		DefaultRequest: corev1.ResourceList{},
	}
	add := func(l corev1.ResourceList, name corev1.ResourceName, v *resource.Quantity) {
		if v != nil {
			l[name] = v.DeepCopy()
		}
	}
	add(item.DefaultRequest, corev1.ResourceCPU, d.CPURequest)
	add(item.DefaultRequest, corev1.ResourceMemory, d.MemoryRequest)
	add(item.Default, corev1.ResourceCPU, d.CPULimit)
	add(item.Default, corev1.ResourceMemory, d.MemoryLimit)
	if d.CPUMax != nil || d.MemoryMax != nil {
		item.Max = corev1.ResourceList{}
		add(item.Max, corev1.ResourceCPU, d.CPUMax)
		add(item.Max, corev1.ResourceMemory, d.MemoryMax)
	}
	return &corev1.LimitRange{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion, "LimitRange"),
		ObjectMeta: meta(bp, ns, LimitRangeName, map[string]string{v1alpha1.LabelTeam: t.Name}),
		Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}},
	}
}

// Budgets is what v1alpha1.AnnotationBudgets, on a team namespace,
// holds: the disruption budget of each class that has one, as JSON
// ({"inference": {"minAvailable": 1}}). Every workload of such a class in
// the namespace gets a budget of its own (internal/budgets): one budget
// over a whole class would let one service lose every replica while
// another keeps the class's minimum.
type Budgets map[string]v1alpha1.Disruption

func budgets(bp *v1alpha1.Blueprint) string {
	b := Budgets{}
	for _, c := range bp.Spec.Classes {
		if c.Disruption != nil {
			b[c.Name] = *c.Disruption
		}
	}
	if len(b) == 0 {
		return ""
	}
	raw, _ := json.Marshal(b) // map keys are sorted: the same blueprint gives the same text
	return string(raw)
}

// Kind is a kind of object berth creates. Prune looks for leftovers of
// exactly these kinds.
type Kind struct {
	Resource   schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// Kinds are the kinds Objects returns, in the order they are applied;
// deletions go in reverse.
var Kinds = []Kind{
	{corev1.SchemeGroupVersion.WithResource("namespaces"), "Namespace", false},
	{schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), "PriorityClass", false},
	{corev1.SchemeGroupVersion.WithResource("resourcequotas"), "ResourceQuota", true},
	{corev1.SchemeGroupVersion.WithResource("limitranges"), "LimitRange", true},
	{policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), "PodDisruptionBudget", true},
	kueueKinds[0], kueueKinds[1], kueueKinds[2], kueueKinds[3],
	{admissionv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"), "ValidatingAdmissionPolicy", false},
	{admissionv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"), "ValidatingAdmissionPolicyBinding", false},
	{admissionv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies"), "MutatingAdmissionPolicy", false},
	{admissionv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings"), "MutatingAdmissionPolicyBinding", false},
}

// KindOf is the Kind entry for obj.
func KindOf(obj runtime.Object) (Kind, bool) {
	k := obj.GetObjectKind().GroupVersionKind()
	for _, kind := range Kinds {
		if kind.Kind == k.Kind && kind.Resource.GroupVersion() == k.GroupVersion() {
			return kind, true
		}
	}
	return Kind{}, false
}
