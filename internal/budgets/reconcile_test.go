package budgets

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"berth.io/berth/api/v1alpha1"
)

// cluster is a namespace whose inference class has a budget, with a
// Deployment of the class, a budget berth made for a Deployment since
// deleted, a class-wide budget an older berth apply made, and a budget
// of someone else's.
func cluster() []runtime.Object {
	berths := func(name string, labels map[string]string, selector map[string]string) *policyv1.PodDisruptionBudget {
		labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedBy
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, Labels: labels},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}},
		}
	}
	return []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Annotations: map[string]string{
			v1alpha1.AnnotationBudgets: `{"inference":{"minAvailable":1}}`,
		}}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "search", UID: "u1"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "search"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "search", v1alpha1.LabelClass: "inference"}}},
			},
		},
		berths("deployment-gone-budget", map[string]string{v1alpha1.LabelBudgetFor: "deployment.gone"}, map[string]string{"app": "gone"}),
		berths("inference-budget", map[string]string{v1alpha1.LabelBlueprint: "shop"}, map[string]string{v1alpha1.LabelClass: "inference"}),
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "theirs"}},
	}
}

func budgetNames(t *testing.T, c kubernetes.Interface) []string {
	t.Helper()
	list, err := c.PolicyV1().PodDisruptionBudgets("team-a").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range list.Items {
		out = append(out, b.Name)
	}
	slices.Sort(out)
	return out
}

// Reconcile comes to the same budgets whether it reads the API, as berth
// apply does, or informers' caches, as the Controller does: the
// Deployment's own, and someone else's, left alone.
func TestReconcileReadsTheAPIOrCaches(t *testing.T) {
	want := []string{"deployment-search-budget", "theirs"}
	ctx := context.Background()

	live := fake.NewClientset(cluster()...)
	if err := Reconcile(ctx, live, FromAPI(live), "team-a"); err != nil {
		t.Fatal(err)
	}
	if got := budgetNames(t, live); !slices.Equal(got, want) {
		t.Errorf("read from the API: budgets %v, want %v", got, want)
	}

	cached := fake.NewClientset(cluster()...)
	factory := informers.NewSharedInformerFactory(cached, 0)
	read := listersOf(factory)
	stop := make(chan struct{})
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	if err := Reconcile(ctx, cached, read, "team-a"); err != nil {
		t.Fatal(err)
	}
	if got := budgetNames(t, cached); !slices.Equal(got, want) {
		t.Errorf("read from caches: budgets %v, want %v", got, want)
	}

	if err := Reconcile(ctx, live, FromAPI(live), "gone"); err != nil {
		t.Errorf("a namespace that is gone: %v", err)
	}
	if err := Reconcile(ctx, cached, read, "gone"); err != nil {
		t.Errorf("a namespace that is gone, from caches: %v", err)
	}
}

// The plan names each change and why; once carried out, planning again
// finds nothing to do, and a class whose budget changes updates the
// workload's budget in place.
func TestPlanSaysWhatChangesAndThenNothing(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(cluster()...)
	changes, err := Plan(ctx, FromAPI(c), "team-a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range changes {
		got = append(got, string(ch.Action)+" "+ch.Ref()+" ("+ch.Detail+")")
	}
	want := []string{
		"create PodDisruptionBudget team-a/deployment-search-budget (Deployment search, class inference: minAvailable 1)",
		"delete PodDisruptionBudget team-a/deployment-gone-budget (its workload is gone or needs no budget)",
		"delete PodDisruptionBudget team-a/inference-budget (a whole class's budget, replaced by one per workload)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := Execute(ctx, c, changes, false); err != nil {
		t.Fatal(err)
	}
	if again, err := Plan(ctx, FromAPI(c), "team-a"); err != nil || len(again) != 0 {
		t.Errorf("the plan after carrying it out: %v, %v; want nothing to do", again, err)
	}

	ns, err := c.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Annotations[v1alpha1.AnnotationBudgets] = `{"inference":{"minAvailable":2}}`
	changes, err = PlanFor(ctx, FromAPI(c), ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Action != Update || !strings.HasSuffix(changes[0].Detail, "minAvailable 2") {
		t.Errorf("with the class's budget at 2: %+v; want one update to minAvailable 2", changes)
	}
}
