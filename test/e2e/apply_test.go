package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/compile"
)

// loadBlueprint parses a blueprint written inline in a test.
func loadBlueprint(t *testing.T, text string) *v1alpha1.Blueprint {
	t.Helper()
	b, _, err := blueprint.Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ownedObjects lists every object berth owns for a blueprint, by
// "KIND NAMESPACE/NAME", so that a test can tell whether anything was
// written. (Writes to nodes are caught by writeCounter.)
func ownedObjects(t *testing.T, name string) map[string]*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	out := map[string]*unstructured.Unstructured{}
	for _, kind := range compile.Kinds {
		l, err := clients.Dynamic.Resource(kind.Resource).List(ctx, metav1.ListOptions{LabelSelector: compile.Selector(name)})
		if apierrors.IsNotFound(err) {
			continue // a kind the cluster does not serve: Kueue's
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			o := &l.Items[i]
			out[kind.Kind+" "+o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	return out
}

// changedOwned lists the objects that were added, removed or written
// between two ownedObjects listings. A new resourceVersion is a write
// unless all that changed is the status, which the quota, disruption and
// policy controllers keep up to date on their own.
func changedOwned(before, after map[string]*unstructured.Unstructured) []string {
	var out []string
	for key, b := range before {
		a, ok := after[key]
		switch {
		case !ok:
			out = append(out, key+" deleted")
		case a.GetResourceVersion() != b.GetResourceVersion():
			if d := cmp.Diff(withoutStatus(b), withoutStatus(a)); d != "" {
				out = append(out, fmt.Sprintf("%s written (resourceVersion %s → %s):\n%s", key, b.GetResourceVersion(), a.GetResourceVersion(), d))
			}
		}
	}
	for key := range after {
		if _, ok := before[key]; !ok {
			out = append(out, key+" created")
		}
	}
	sort.Strings(out)
	return out
}

// withoutStatus is o less its status, resourceVersion and the
// managedFields entries of status writes.
func withoutStatus(o *unstructured.Unstructured) map[string]any {
	c := o.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	c.SetResourceVersion("")
	var fields []metav1.ManagedFieldsEntry
	for _, f := range c.GetManagedFields() {
		if f.Subresource != "status" {
			fields = append(fields, f)
		}
	}
	c.SetManagedFields(fields)
	return c.Object
}

// A second apply of the same blueprint finds nothing to do and writes
// nothing (no request but reads reaches the API server);
// `berth plan` says so and exits 0, and exits 2 with the field that
// changes when the blueprint changes; neither it nor apply --dry-run
// changes anything.
func TestSecondApplyWritesNothing(t *testing.T) {
	ctx := context.Background()
	owned := ownedObjects(t, bp.Metadata.Name)
	if len(owned) < 10 {
		t.Fatalf("the applied e2e blueprint owns only %d objects: %v", len(owned), owned)
	}
	plan, err := apply.Compute(ctx, clients, bp, apply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Empty() {
		var b strings.Builder
		plan.Render(&b)
		t.Fatalf("plan right after apply is not empty:\n%s", b.String())
	}
	writes := &writeCounter{}
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { writes.next = rt; return writes })
	cl := apply.Client{Kube: kubernetes.NewForConfigOrDie(counted), Dynamic: dynamic.NewForConfigOrDie(counted)}
	plan, err = apply.Compute(ctx, cl, bp, apply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := apply.Execute(ctx, cl, plan, apply.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := writes.list(); len(w) > 0 {
		t.Errorf("the second apply wrote: %v", w)
	}
	// Nor does it need to ask the API server: the fields berth owns
	// already hold the blueprint's values.
	writes.mu.Lock()
	if len(writes.dryRuns) > 0 {
		t.Errorf("the second plan made %d server-side dry runs, want none: %v", len(writes.dryRuns), writes.dryRuns)
	}
	writes.mu.Unlock()
	if changed := changedOwned(owned, ownedObjects(t, bp.Metadata.Name)); len(changed) > 0 {
		t.Errorf("after the second apply, objects berth owns changed:\n%s", strings.Join(changed, "\n"))
	}

	home := t.TempDir()
	out, code := berth(t, home, "plan", "--kubeconfig", kubeconfig, "-f", "testdata/e2e.yaml")
	if code != 0 || !strings.Contains(out, "No changes") {
		t.Errorf("berth plan of the applied blueprint exited %d, want 0 and no changes:\n%s", code, out)
	}
	raw, err := os.ReadFile("testdata/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(home, "changed.yaml")
	os.WriteFile(changed, []byte(strings.Replace(string(raw), "quota: {gpu: 2}", "quota: {gpu: 3}", 1)), 0o600)
	out, code = berth(t, home, "plan", "--kubeconfig", kubeconfig, "-f", changed)
	want := `spec.hard["requests.nvidia.com/gpu"]: 2 → 3`
	if code != 2 || !strings.Contains(out, "~ update ResourceQuota team-b/team-quota") || !strings.Contains(out, want) {
		t.Errorf("berth plan of a changed quota exited %d, want 2 and %q:\n%s", code, want, out)
	}
	out, code = berth(t, home, "apply", "--dry-run", "--kubeconfig", kubeconfig, "-f", changed)
	if code != 0 || !strings.Contains(out, "would update ResourceQuota team-b/team-quota") {
		t.Errorf("berth apply --dry-run exited %d, want 0 and the update it would make:\n%s", code, out)
	}
	if q, err := client.CoreV1().ResourceQuotas("team-b").Get(ctx, "team-quota", metav1.GetOptions{}); err != nil || q.Spec.Hard.Name("requests.nvidia.com/gpu", resource.DecimalSI).String() != "2" {
		t.Errorf("berth plan or apply --dry-run changed the quota: %v %v", q.Spec.Hard, err)
	}

	// Under queueing: Kueue the quotas become Kueue's objects, which a
	// local cluster started under ResourceQuota does not run: apply says
	// so, with how to start one that does, and changes nothing (it would
	// otherwise cut the ResourceQuota down to pods).
	kueued := filepath.Join(home, "kueue.yaml")
	os.WriteFile(kueued, []byte(strings.Replace(string(raw), "\nspec:\n", "\nspec:\n  queueing: Kueue\n", 1)), 0o600)
	out, code = berth(t, home, "apply", "--kubeconfig", kubeconfig, "-f", kueued)
	if code != 1 || !strings.Contains(out, "spec.queueing: is Kueue, but this local cluster was started with queueing: ResourceQuota") || !strings.Contains(out, "berth up -f FILE") {
		t.Errorf("berth apply of a blueprint under Kueue exited %d, want 1 and why, with the fix:\n%s", code, out)
	}
	if q, err := client.CoreV1().ResourceQuotas("team-b").Get(ctx, "team-quota", metav1.GetOptions{}); err != nil || q.Spec.Hard.Name("requests.nvidia.com/gpu", resource.DecimalSI).String() != "2" {
		t.Errorf("berth apply under Kueue changed the quota: %v %v", q.Spec.Hard, err)
	}
}

const pruneBlueprint = `
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: prune}
spec:
  guardrails: Off
  pools:
  - {name: prune-system, mode: System, machine: {cpu: 2, memory: 4Gi}, count: 1}
  teams:
  - name: prune-a
    quota: {cpu: "8"}
  - name: prune-b
  classes:
  - {name: prune-inference, priority: high, pools: [prune-system]}
`

// --prune deletes what berth created and the blueprint dropped, and
// leaves alone an object berth did not create, even one with berth's
// labels and a similar name.
func TestPruneDeletesOnlyWhatBerthCreated(t *testing.T) {
	ctx := context.Background()
	first := loadBlueprint(t, pruneBlueprint)
	if err := applyBlueprint(ctx, first, apply.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Applying a blueprint with nothing left in it prunes everything.
		applyBlueprint(context.Background(), loadBlueprint(t, `
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: prune}
spec:
  guardrails: Off
  pools: [{name: prune-system, mode: System, machine: {cpu: 2, memory: 4Gi}, count: 1}]
`), apply.Options{Prune: true})
		client.CoreV1().Nodes().Delete(context.Background(), "prune-system-0", metav1.DeleteOptions{})
	})
	decoy := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prune-a", Name: "team-quota-2", Labels: compile.Labels(first)},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100")}},
	}
	if _, err := client.CoreV1().ResourceQuotas("prune-a").Create(ctx, decoy, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}

	// prune-a loses its quota, prune-b and the class go.
	second := loadBlueprint(t, `
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: prune}
spec:
  guardrails: Off
  pools:
  - {name: prune-system, mode: System, machine: {cpu: 2, memory: 4Gi}, count: 1}
  teams:
  - name: prune-a
`)
	plan, err := apply.Compute(ctx, clients, second, apply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plan.Objects {
		if c.Action == apply.Delete {
			t.Errorf("without --prune the plan deletes %s", c.Ref())
		}
	}
	plan, err = apply.Compute(ctx, clients, second, apply.Options{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, c := range plan.Objects {
		if c.Action == apply.Delete {
			deleted = append(deleted, c.Ref())
		}
	}
	want := []string{"LimitRange prune-b/team-defaults", "ResourceQuota prune-a/team-quota", "ResourceQuota prune-b/team-classes", "PriorityClass prune-inference-high", "Namespace prune-b"}
	if strings.Join(deleted, ", ") != strings.Join(want, ", ") {
		t.Errorf("prune deletes %v, want %v", deleted, want)
	}
	if len(plan.Ignored) != 1 || !strings.Contains(plan.Ignored[0], "ResourceQuota prune-a/team-quota-2") {
		t.Errorf("plan.Ignored = %v, want the decoy quota named as not berth's", plan.Ignored)
	}
	if err := apply.Execute(ctx, clients, plan, apply.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ResourceQuotas("prune-a").Get(ctx, "team-quota-2", metav1.GetOptions{}); err != nil {
		t.Errorf("prune removed the quota berth did not create: %v", err)
	}
	if _, err := client.CoreV1().ResourceQuotas("prune-a").Get(ctx, "team-quota", metav1.GetOptions{}); err == nil {
		t.Error("prune left berth's quota that the blueprint dropped")
	}
	if _, err := client.SchedulingV1().PriorityClasses().Get(ctx, "prune-inference-high", metav1.GetOptions{}); err == nil {
		t.Error("prune left the PriorityClass of a class the blueprint dropped")
	}
}

// A field another manager has taken is a conflict that plan reports and
// apply refuses, until --force-conflicts hands it back to berth.
func TestConflictIsReportedNotForced(t *testing.T) {
	ctx := context.Background()
	q, err := client.CoreV1().ResourceQuotas("team-a").Get(ctx, "team-quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("100")
	if _, err := client.CoreV1().ResourceQuotas("team-a").Update(ctx, q, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	plan, err := apply.Compute(ctx, clients, bp, apply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	problems := plan.Problems().Error()
	if !strings.Contains(problems, "ResourceQuota team-a/team-quota") || !strings.Contains(problems, `managed by "kubectl-edit"`) {
		t.Fatalf("plan problems = %q, want the quota's conflict with kubectl-edit", problems)
	}
	if err := apply.Execute(ctx, clients, plan, apply.ExecOptions{}); err == nil {
		t.Fatal("apply went ahead over another manager's field")
	}
	got, _ := client.CoreV1().ResourceQuotas("team-a").Get(ctx, "team-quota", metav1.GetOptions{})
	if cpu := got.Spec.Hard[corev1.ResourceRequestsCPU]; cpu.String() != "100" {
		t.Errorf("the refused apply changed requests.cpu to %s", cpu.String())
	}
	if err := applyBlueprint(ctx, bp, apply.Options{ForceConflicts: true}); err != nil {
		t.Fatal(err)
	}
	got, _ = client.CoreV1().ResourceQuotas("team-a").Get(ctx, "team-quota", metav1.GetOptions{})
	if cpu := got.Spec.Hard[corev1.ResourceRequestsCPU]; cpu.String() != "64" {
		t.Errorf("after --force-conflicts requests.cpu = %s, want the blueprint's 64", cpu.String())
	}
}

// Apply adds nodes to a pool and drains and removes those it no longer
// needs, highest index first.
func TestApplyResizesPool(t *testing.T) {
	ctx := context.Background()
	removeNodesOf(t, "resize")
	sized := func(n string) *v1alpha1.Blueprint {
		return loadBlueprint(t, strings.Replace(poolBlueprint("resize", "bg=x:NoSchedule"), "count: 2", "count: "+n, 1))
	}
	nodes := func() string {
		l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=resize-gpu"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range l.Items {
			names = append(names, n.Name)
		}
		return strings.Join(names, ",")
	}
	for _, step := range []struct{ count, want string }{
		{"1", "resize-gpu-0"},
		{"3", "resize-gpu-0,resize-gpu-1,resize-gpu-2"},
		{"2", "resize-gpu-0,resize-gpu-1"},
	} {
		if err := applyBlueprint(ctx, sized(step.count), apply.Options{}); err != nil {
			t.Fatalf("count %s: %v", step.count, err)
		}
		if got := nodes(); got != step.want {
			t.Errorf("count %s: nodes %s, want %s", step.count, got, step.want)
		}
	}
}

// writeCounter records every request that could change the cluster: all
// but reads and server-side dry runs.
type writeCounter struct {
	next    http.RoundTripper
	mu      sync.Mutex
	writes  []string
	dryRuns []string
}

func (w *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		w.mu.Lock()
		if r.URL.Query().Get("dryRun") == "" {
			w.writes = append(w.writes, r.Method+" "+r.URL.Path)
		} else {
			w.dryRuns = append(w.dryRuns, r.Method+" "+r.URL.Path)
		}
		w.mu.Unlock()
	}
	return w.next.RoundTrip(r)
}

func (w *writeCounter) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}
