package compile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

func retail(t *testing.T) []Object {
	t.Helper()
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	bp, _, err := blueprint.Parse("retail.yaml", raw)
	if err != nil {
		t.Fatal(err)
	}
	return Objects(bp)
}

func TestRetailObjectsInApplyOrder(t *testing.T) {
	var got []string
	for _, o := range retail(t) {
		kind, ok := KindOf(o)
		if !ok {
			t.Fatalf("%T is not one of the kinds prune looks for", o)
		}
		ref := kind.Kind + " " + o.GetName()
		if o.GetNamespace() != "" {
			ref = kind.Kind + " " + o.GetNamespace() + "/" + o.GetName()
		}
		got = append(got, ref)
		if o.GetLabels()[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy || o.GetLabels()[v1alpha1.LabelBlueprint] != "retail-analytics" {
			t.Errorf("%s lacks the ownership labels: %v", ref, o.GetLabels())
		}
	}
	want := []string{
		"Namespace team-a", "Namespace team-b",
		"PriorityClass inference-high", "PriorityClass training-low",
		"ResourceQuota team-a/team-quota", "ResourceQuota team-a/team-classes", "LimitRange team-a/team-defaults",
		"ResourceQuota team-b/team-quota", "ResourceQuota team-b/team-classes", "LimitRange team-b/team-defaults",
		"ValidatingAdmissionPolicy berth-pods", "ValidatingAdmissionPolicyBinding berth-pods",
		"ValidatingAdmissionPolicy berth-workloads", "ValidatingAdmissionPolicyBinding berth-workloads",
		"ValidatingAdmissionPolicy berth-cronjobs", "ValidatingAdmissionPolicyBinding berth-cronjobs",
		"ValidatingAdmissionPolicy berth-namespaces", "ValidatingAdmissionPolicyBinding berth-namespaces",
		"ValidatingAdmissionPolicy berth-priorityclasses", "ValidatingAdmissionPolicyBinding berth-priorityclasses",
		"MutatingAdmissionPolicy berth-class-pods", "MutatingAdmissionPolicyBinding berth-class-pods",
		"MutatingAdmissionPolicy berth-class-deployments", "MutatingAdmissionPolicyBinding berth-class-deployments",
		"MutatingAdmissionPolicy berth-class-statefulsets", "MutatingAdmissionPolicyBinding berth-class-statefulsets",
		"MutatingAdmissionPolicy berth-class-jobs", "MutatingAdmissionPolicyBinding berth-class-jobs",
		"MutatingAdmissionPolicy berth-class-cronjobs", "MutatingAdmissionPolicyBinding berth-class-cronjobs",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
}

func TestRetailSemantics(t *testing.T) {
	for _, o := range retail(t) {
		switch o := o.(type) {
		case *corev1.ResourceQuota:
			if o.Namespace == "team-a" && o.Name == QuotaName {
				want := corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4"), "requests.cpu": resource.MustParse("64"), "requests.memory": resource.MustParse("256Gi")}
				if d := cmp.Diff(want, o.Spec.Hard); d != "" {
					t.Errorf("team-a quota (-want +got):\n%s", d)
				}
			}
			if _, bare := o.Spec.Hard["nvidia.com/gpu"]; bare {
				t.Errorf("quota %s/%s uses the bare nvidia.com/gpu key, which quotas ignore", o.Namespace, o.Name)
			}
		case *corev1.LimitRange:
			for _, item := range o.Spec.Limits {
				for _, l := range []corev1.ResourceList{item.Default, item.DefaultRequest, item.Max} {
					if _, ok := l["nvidia.com/gpu"]; ok {
						t.Errorf("LimitRange %s/%s mentions GPUs; it must never default or cap them", o.Namespace, o.Name)
					}
				}
				if cpu := item.Max[corev1.ResourceCPU]; cpu.String() != "24" {
					t.Errorf("LimitRange max cpu = %s, want the largest machine's 24", cpu.String())
				}
			}
		case *schedulingv1.PriorityClass:
			if o.GlobalDefault {
				t.Errorf("PriorityClass %s is globalDefault without being asked", o.Name)
			}
			if o.Name == "training-low" && *o.PreemptionPolicy != corev1.PreemptNever {
				t.Errorf("training-low preemptionPolicy = %s, want Never", *o.PreemptionPolicy)
			}
		case *policyv1.PodDisruptionBudget:
			t.Errorf("budget %s/%s: budgets are per workload (internal/budgets), not per class", o.Namespace, o.Name)
		case *corev1.Namespace:
			// The seed: the recommendation service never drops below
			// two replicas.
			if got := o.Annotations[v1alpha1.AnnotationBudgets]; got != `{"inference":{"minAvailable":2}}` {
				t.Errorf("namespace %s budgets annotation = %q, want inference's minAvailable 2", o.Name, got)
			}
		}
	}
	var high, low int32
	for _, o := range retail(t) {
		if pc, ok := o.(*schedulingv1.PriorityClass); ok {
			switch pc.Name {
			case "inference-high":
				high = pc.Value
			case "training-low":
				low = pc.Value
			}
		}
	}
	if high <= low {
		t.Errorf("inference-high (%d) is not above training-low (%d)", high, low)
	}
}

func TestClassQuotaRefusesOtherClasses(t *testing.T) {
	bp, _, err := blueprint.Parse("b.yaml", []byte(`
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: b}
spec:
  pools: [{name: sys, mode: System, machine: {cpu: 2, memory: 4Gi}}]
  teams:
  - {name: analysts, classes: [batch]}
  classes:
  - {name: inference, priority: high, pools: [sys]}
  - {name: batch, priority: low, pools: [sys]}
`))
	if err != nil {
		t.Fatal(err)
	}
	var found *corev1.ResourceQuota
	for _, o := range Objects(bp) {
		if q, ok := o.(*corev1.ResourceQuota); ok && q.Name == ClassQuotaName {
			found = q
		}
	}
	if found == nil {
		t.Fatal("no priority-scoped quota for a team limited to some classes")
	}
	want := []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"system-cluster-critical", "system-node-critical", "inference-high"}}}
	if d := cmp.Diff(want, found.Spec.ScopeSelector.MatchExpressions); d != "" {
		t.Errorf("scope (-want +got):\n%s", d)
	}
	if pods := found.Spec.Hard[corev1.ResourcePods]; !pods.IsZero() {
		t.Errorf("hard pods = %s, want 0", pods.String())
	}
}

func TestGuardrailModes(t *testing.T) {
	for mode, want := range map[v1alpha1.GuardrailMode][]admissionv1.ValidationAction{
		v1alpha1.GuardrailsEnforce: {admissionv1.Deny},
		v1alpha1.GuardrailsWarn:    {admissionv1.Warn},
		v1alpha1.GuardrailsAudit:   {admissionv1.Audit},
		v1alpha1.GuardrailsOff:     nil,
	} {
		raw, _ := blueprint.Template("retail")
		bp, _, err := blueprint.Parse("retail.yaml", raw)
		if err != nil {
			t.Fatal(err)
		}
		bp.Spec.Guardrails = mode
		var bindings int
		for _, o := range Objects(bp) {
			if b, ok := o.(*admissionv1.ValidatingAdmissionPolicyBinding); ok {
				bindings++
				if d := cmp.Diff(want, b.Spec.ValidationActions); d != "" {
					t.Errorf("%s: binding %s actions (-want +got):\n%s", mode, b.Name, d)
				}
			}
			if p, ok := o.(*admissionv1.ValidatingAdmissionPolicy); ok && *p.Spec.FailurePolicy != admissionv1.Fail {
				t.Errorf("policy %s fails open", p.Name)
			}
		}
		if (mode == v1alpha1.GuardrailsOff) != (bindings == 0) {
			t.Errorf("%s: %d policy bindings", mode, bindings)
		}
	}
}
