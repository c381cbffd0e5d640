package budgets

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

func TestDesiredGivesEachWorkloadOfABudgetedClassItsOwn(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Annotations: map[string]string{
		v1alpha1.AnnotationBudgets: `{"inference":{"minAvailable":1},"batch":{"maxUnavailable":"25%"}}`,
	}}}
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	got, err := Desired(ns, []Workload{
		{Kind: "Deployment", Name: "search", UID: "u1", Selector: sel("search"), Class: "inference"},
		{Kind: "StatefulSet", Name: "ranker", UID: "u2", Selector: sel("ranker"), Class: "inference"},
		{Kind: "Deployment", Name: "etl", UID: "u3", Selector: sel("etl"), Class: "batch"},
		{Kind: "Deployment", Name: "train", UID: "u4", Selector: sel("train"), Class: "training"},
		{Kind: "Deployment", Name: "plain", UID: "u5", Selector: sel("plain")},
	})
	if err != nil {
		t.Fatal(err)
	}
	type summary struct{ Name, Selector, Min, Max, Owner string }
	var have []summary
	for _, b := range got {
		s := summary{Name: *b.Name, Selector: b.Spec.Selector.MatchLabels["app"], Owner: *b.OwnerReferences[0].Kind + "/" + *b.OwnerReferences[0].Name}
		if b.Spec.MinAvailable != nil {
			s.Min = b.Spec.MinAvailable.String()
		}
		if b.Spec.MaxUnavailable != nil {
			s.Max = b.Spec.MaxUnavailable.String()
		}
		have = append(have, s)
	}
	want := []summary{
		{"deployment-etl-budget", "etl", "", "25%", "Deployment/etl"},
		{"deployment-search-budget", "search", "1", "", "Deployment/search"},
		{"statefulset-ranker-budget", "ranker", "1", "", "StatefulSet/ranker"},
	}
	if d := cmp.Diff(want, have); d != "" {
		t.Errorf("budgets (-want +got):\n%s", d)
	}
}

func TestDesiredExplainsABrokenAnnotation(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Annotations: map[string]string{v1alpha1.AnnotationBudgets: "{not json"}}}
	_, err := Desired(ns, []Workload{{Kind: "Deployment", Name: "x", Class: "inference"}})
	if err == nil {
		t.Fatal("a broken annotation was read")
	}
	for _, w := range []string{"team-a", v1alpha1.AnnotationBudgets, "berth apply"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
}
