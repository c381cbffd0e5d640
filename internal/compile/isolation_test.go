package compile

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

// The isolation a class asks for decides which anti-affinity term its GPU
// pods get, and against which classes; General classes get none.
func TestIsolationTerms(t *testing.T) {
	for _, tc := range []struct {
		name, isolation string
		want, not       []string
	}{
		{"default is required", "", []string{"requiredDuringSchedulingIgnoredDuringExecution", `values: ["training"]`}, []string{"podAntiAffinity.preferredDuringScheduling"}},
		{"preferred", "Preferred", []string{"podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution{weight: 100"}, nil},
		{"none", "None", nil, []string{"podAntiAffinity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bp, _, err := blueprint.Parse("b.yaml", []byte(`
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: b}
spec:
  pools:
  - {name: sys, mode: System, machine: {cpu: 2, memory: 4Gi}, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: gpu, machine: {cpu: 8, memory: 32Gi, gpu: {count: 4, product: NVIDIA-A100}}, taints: ["gpu=true:NoSchedule"]}
  classes:
  - {name: inference, priority: high, pools: [gpu], isolation: "`+tc.isolation+`"}
  - {name: training, priority: low, preemption: Never, pools: [gpu]}
  - {name: batch, pools: [gpu]}
`))
			if err != nil {
				t.Fatal(err)
			}
			inference := classPatchText(bp, "inference")
			for _, w := range tc.want {
				if !strings.Contains(inference, w) {
					t.Errorf("inference's patches lack %q", w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(inference, w) {
					t.Errorf("inference's patches have %q", w)
				}
			}
			if training := classPatchText(bp, "training"); !strings.Contains(training, `values: ["inference"]`) {
				t.Errorf("training does not keep off inference's nodes")
			}
			if batch := classPatchText(bp, "batch"); strings.Contains(batch, "podAntiAffinity") {
				t.Errorf("a General class got an anti-affinity")
			}
		})
	}
}

// classPatchText is the pod policy's patches for one class.
func classPatchText(bp *v1alpha1.Blueprint, class string) string {
	for i := range bp.Spec.Classes {
		if bp.Spec.Classes[i].Name == class {
			return strings.Join(classPatches(bp, &bp.Spec.Classes[i], mutationTargets[0]), "\n")
		}
	}
	return ""
}

// Every class policy matches objects by their class label, their pod
// template's label or their priority class, not by an object selector
// that sees only the object's own labels.
func TestClassPoliciesMatchTemplateLabelsAndPriorityClasses(t *testing.T) {
	for _, o := range retail(t) {
		p, ok := o.(*admissionv1.MutatingAdmissionPolicy)
		if !ok || !strings.HasPrefix(p.Name, "berth-class-") {
			continue
		}
		if p.Spec.MatchConstraints.ObjectSelector != nil {
			t.Errorf("%s matches by object selector", p.Name)
		}
		cond := p.Spec.MatchConditions[0].Expression
		for _, w := range []string{"inference-high", "object.metadata.labels"} {
			if !strings.Contains(cond, w) {
				t.Errorf("%s's match condition lacks %q", p.Name, w)
			}
		}
		if p.Name != "berth-class-pods" && !strings.Contains(cond, "template.metadata.labels") {
			t.Errorf("%s's match condition ignores the pod template's labels", p.Name)
		}
	}
}
