// Package budgets gives every workload of a class with a disruption budget
// a PodDisruptionBudget of its own. One budget over a whole class (all of
// its pods in a namespace) lets one service lose every replica in a drain
// while another keeps the class's minimum; the seed's promise is per
// service.
//
// The classes' budgets come from the team namespace's berth.io/budgets
// annotation, which berth apply sets from the blueprint. A workload's
// class is its pod template's berth.io/class label, which the class
// policies set from the object's label, the template's or its priority
// class. Each budget selects exactly the workload's pods (its selector),
// is owned by the workload (garbage-collected with it), and is written by
// the field manager berth-budgets, so berth apply --prune leaves it alone.
//
// Plan says what one namespace needs, reading through a Reader, and
// Execute writes it: berth apply plans every team namespace as a stage of
// its plan, on any cluster, reading the API (FromAPI); Controller keeps
// every namespace reconciled on the local cluster (Reconcile), reading
// its informers' caches.
package budgets

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metaac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/problem"
)

// Workload is what a budget is derived from.
type Workload struct {
	Kind     string // Deployment or StatefulSet
	Name     string
	UID      string
	Selector *metav1.LabelSelector
	Class    string // the pod template's berth.io/class
}

// Name is the budget's name for a workload: KIND-NAME-budget.
func Name(kind, workload string) string {
	return strings.ToLower(kind) + "-" + workload + "-budget"
}

// Desired is the budget each workload of a class with a budget should
// have in a namespace whose berth.io/budgets annotation holds classes' budgets.
func Desired(ns *corev1.Namespace, workloads []Workload) ([]*policyac.PodDisruptionBudgetApplyConfiguration, error) {
	raw := ns.Annotations[v1alpha1.AnnotationBudgets]
	if raw == "" {
		return nil, nil
	}
	var classes compile.Budgets
	if err := json.Unmarshal([]byte(raw), &classes); err != nil {
		return nil, &problem.Problem{
			Object:  problem.Object{Kind: "Namespace", Name: ns.Name},
			Message: fmt.Sprintf("annotation %s is not a class-to-budget map (%v)", v1alpha1.AnnotationBudgets, err),
			Fix:     "run berth apply to rewrite it",
			Err:     err,
		}
	}
	var out []*policyac.PodDisruptionBudgetApplyConfiguration
	for _, w := range workloads {
		d, ok := classes[w.Class]
		if !ok || w.Selector == nil {
			continue
		}
		spec := policyac.PodDisruptionBudgetSpec().WithSelector(selector(w.Selector))
		if d.MinAvailable != nil {
			spec.WithMinAvailable(*d.MinAvailable)
		}
		if d.MaxUnavailable != nil {
			spec.WithMaxUnavailable(*d.MaxUnavailable)
		}
		out = append(out, policyac.PodDisruptionBudget(Name(w.Kind, w.Name), ns.Name).
			WithLabels(map[string]string{
				v1alpha1.LabelManagedBy: v1alpha1.ManagedBy,
				v1alpha1.LabelClass:     w.Class,
				v1alpha1.LabelBudgetFor: strings.ToLower(w.Kind) + "." + w.Name,
			}).
			WithOwnerReferences(metaac.OwnerReference().
				WithAPIVersion(appsv1.SchemeGroupVersion.String()).WithKind(w.Kind).
				WithName(w.Name).WithUID(types.UID(w.UID))).
			WithSpec(spec))
	}
	sort.Slice(out, func(i, j int) bool { return *out[i].Name < *out[j].Name })
	return out, nil
}

func selector(s *metav1.LabelSelector) *metaac.LabelSelectorApplyConfiguration {
	out := metaac.LabelSelector().WithMatchLabels(s.MatchLabels)
	for _, e := range s.MatchExpressions {
		out.WithMatchExpressions(metaac.LabelSelectorRequirement().WithKey(e.Key).WithOperator(e.Operator).WithValues(e.Values...))
	}
	return out
}

// Reconcile makes the budgets of one namespace what its workloads and
// classes ask for (Plan, then Execute): it reads the namespace from r and
// writes through c.
func Reconcile(ctx context.Context, c kubernetes.Interface, r Reader, namespace string) error {
	changes, err := Plan(ctx, r, namespace)
	if err != nil {
		return err
	}
	return Execute(ctx, c, changes, false)
}

// classWide reports whether b is a budget earlier versions of berth apply
// made over all of a class's pods.
func classWide(b *policyv1.PodDisruptionBudget) bool {
	s := b.Spec.Selector
	return b.Labels[v1alpha1.LabelBlueprint] != "" && s != nil && len(s.MatchExpressions) == 0 &&
		len(s.MatchLabels) == 1 && s.MatchLabels[v1alpha1.LabelClass] != "" && b.Name == s.MatchLabels[v1alpha1.LabelClass]+"-budget"
}
