package budgets

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	policyac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
)

// Action is what a plan does to one budget.
type Action string

const (
	Create Action = "create"
	Update Action = "update"
	Delete Action = "delete"
)

// Change is one budget a plan writes or deletes.
type Change struct {
	Action    Action
	Namespace string
	Name      string
	// Detail says what the budget is for and holds ("Deployment search,
	// class inference: minAvailable 2"), or why it goes.
	Detail string

	desired *policyac.PodDisruptionBudgetApplyConfiguration
}

// Ref names the budget in output: PodDisruptionBudget namespace/name.
func (c Change) Ref() string { return "PodDisruptionBudget " + c.Namespace + "/" + c.Name }

// Plan is what Reconcile would change in one namespace, read through r.
// A namespace that does not exist has nothing to change.
func Plan(ctx context.Context, r Reader, namespace string) ([]Change, error) {
	ns, err := r.Namespace(ctx, namespace)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	return PlanFor(ctx, r, ns)
}

// PlanFor is Plan with the namespace given, as it will be: berth apply
// passes the namespace the blueprint writes, whose classes' budgets may
// be new. Budgets whose workload needs one and lacks it, or has one that
// differs, are written; budgets berth made for workloads that no longer
// need one are deleted, and so is a budget an older berth apply made over
// a whole class, which the per-workload ones replace (a pod under two
// budgets cannot be evicted at all).
func PlanFor(ctx context.Context, r Reader, ns *corev1.Namespace) ([]Change, error) {
	var workloads []Workload
	deps, err := r.Deployments(ctx, ns.Name)
	if err != nil {
		return nil, err
	}
	for _, d := range deps {
		workloads = append(workloads, Workload{"Deployment", d.Name, string(d.UID), d.Spec.Selector, d.Spec.Template.Labels[v1alpha1.LabelClass]})
	}
	sets, err := r.StatefulSets(ctx, ns.Name)
	if err != nil {
		return nil, err
	}
	for _, s := range sets {
		workloads = append(workloads, Workload{"StatefulSet", s.Name, string(s.UID), s.Spec.Selector, s.Spec.Template.Labels[v1alpha1.LabelClass]})
	}
	want, err := Desired(ns, workloads)
	if err != nil {
		return nil, err
	}
	have, err := r.Budgets(ctx, ns.Name)
	if err != nil {
		return nil, err
	}
	live := map[string]*policyv1.PodDisruptionBudget{}
	for _, b := range have {
		live[b.Name] = b
	}
	var out []Change
	keep := map[string]bool{}
	for _, b := range want {
		keep[*b.Name] = true
		ch := Change{Action: Create, Namespace: ns.Name, Name: *b.Name, Detail: describe(b), desired: b}
		if l, ok := live[*b.Name]; ok {
			if same(l, b) {
				continue
			}
			ch.Action = Update
		}
		out = append(out, ch)
	}
	for _, b := range have {
		_, mine := b.Labels[v1alpha1.LabelBudgetFor]
		switch {
		case mine && !keep[b.Name]:
			out = append(out, Change{Action: Delete, Namespace: ns.Name, Name: b.Name, Detail: "its workload is gone or needs no budget"})
		case len(want) > 0 && classWide(b):
			out = append(out, Change{Action: Delete, Namespace: ns.Name, Name: b.Name, Detail: "a whole class's budget, replaced by one per workload"})
		}
	}
	return out, nil
}

// Execute carries changes out through c, as the field manager
// berth-budgets; dryRun sends each as a server-side dry run.
func Execute(ctx context.Context, c kubernetes.Interface, changes []Change, dryRun bool) error {
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	for _, ch := range changes {
		switch ch.Action {
		case Create, Update:
			if _, err := c.PolicyV1().PodDisruptionBudgets(ch.Namespace).Apply(ctx, ch.desired, metav1.ApplyOptions{FieldManager: v1alpha1.FieldManagerBudgets, Force: true, DryRun: dry}); err != nil {
				return fmt.Errorf("applying budget %s/%s: %w", ch.Namespace, ch.Name, err)
			}
		case Delete:
			err := c.PolicyV1().PodDisruptionBudgets(ch.Namespace).Delete(ctx, ch.Name, metav1.DeleteOptions{DryRun: dry})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting budget %s/%s: %w", ch.Namespace, ch.Name, err)
			}
		}
	}
	return nil
}

// describe is a desired budget's workload, class and bound.
func describe(b *policyac.PodDisruptionBudgetApplyConfiguration) string {
	var bound []string
	if v := b.Spec.MinAvailable; v != nil {
		bound = append(bound, "minAvailable "+v.String())
	}
	if v := b.Spec.MaxUnavailable; v != nil {
		bound = append(bound, "maxUnavailable "+v.String())
	}
	workload := ""
	if len(b.OwnerReferences) > 0 {
		workload = *b.OwnerReferences[0].Kind + " " + *b.OwnerReferences[0].Name + ", "
	}
	return workload + "class " + b.Labels[v1alpha1.LabelClass] + ": " + strings.Join(bound, ", ")
}

// same reports whether the live budget already holds what berth would
// write: its selector, bounds, labels and owner.
func same(live *policyv1.PodDisruptionBudget, want *policyac.PodDisruptionBudgetApplyConfiguration) bool {
	for k, v := range want.Labels {
		if live.Labels[k] != v {
			return false
		}
	}
	if len(want.OwnerReferences) > 0 {
		o := want.OwnerReferences[0]
		found := false
		for _, l := range live.OwnerReferences {
			found = found || (l.Kind == *o.Kind && l.Name == *o.Name && l.UID == types.UID(*o.UID))
		}
		if !found {
			return false
		}
	}
	return intOrStringEqual(live.Spec.MinAvailable, want.Spec.MinAvailable) &&
		intOrStringEqual(live.Spec.MaxUnavailable, want.Spec.MaxUnavailable) &&
		apiequality.Semantic.DeepEqual(live.Spec.Selector, selectorOf(want))
}

func intOrStringEqual(a, b *intstr.IntOrString) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// selectorOf is the desired budget's selector as the API holds it.
func selectorOf(b *policyac.PodDisruptionBudgetApplyConfiguration) *metav1.LabelSelector {
	s := b.Spec.Selector
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: *e.Key, Operator: *e.Operator, Values: e.Values})
	}
	return out
}
