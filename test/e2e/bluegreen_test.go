package e2e

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/objtest"
)

// poolBlueprint is a blueprint of its own for a test that replaces a
// pool, so that the suite's pools are never disturbed.
func poolBlueprint(name, taint string) string {
	return `
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: ` + name + `}
spec:
  guardrails: Off # the suite's blueprint holds the cluster's guardrails
  zones: [zone-1, zone-2]
  pools:
  - {name: ` + name + `-system, mode: System, machine: {cpu: 2, memory: 4Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - name: ` + name + `-gpu
    machine: {cpu: 8, memory: 32Gi, gpu: {count: 1, product: NVIDIA-L4}}
    count: 2
    taints: ["` + taint + `"]
`
}

// removeNodesOf deletes a test blueprint's nodes when the test ends.
func removeNodesOf(t *testing.T, blueprint string) {
	t.Cleanup(func() {
		client.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: v1alpha1.LabelBlueprint + "=" + blueprint})
	})
}

// podsOnPool maps each ready pod of app to its node's pool generation.
func readyPods(t *testing.T, ns, app string) []corev1.Pod {
	t.Helper()
	l, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && isPodReady(&p) {
			out = append(out, p)
		}
	}
	return out
}

func isPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Behaviour 6: a PodDisruptionBudget with minAvailable refuses the
// eviction that would break it.
func TestBudgetRefusesEviction(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createDeployment(t, objtest.MakeDeployment(ns, "serve", 2).Obj())
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, objtest.MinAvailable(ns, "serve", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningPods(t, ns, "app=serve", 2)
	eventually(t, 30*time.Second, "the budget's status", func() (bool, error) {
		b, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "serve", metav1.GetOptions{})
		return err == nil && b.Status.ObservedGeneration == b.Generation && b.Status.CurrentHealthy == 2, err
	})
	pod := readyPods(t, ns, "serve")[0]
	err := client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name}})
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "disruption budget") {
		t.Fatalf("evicting a pod its budget protects: %v, want 429 naming the disruption budget", err)
	}
}

// Behaviour 9: changing a pool's taint replaces the pool blue/green; the
// budget is honoured throughout, and every pod that ran on the old nodes
// runs again on the new ones. A workload that would not fit the new
// nodes stops the apply before anything changes.
func TestTaintChangeReplacesPool(t *testing.T) {
	ctx := context.Background()
	removeNodesOf(t, "bluegreen")
	if err := applyBlueprint(ctx, loadBlueprint(t, poolBlueprint("bluegreen", "bg=old:NoSchedule")), apply.Options{}); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	serve := objtest.MakeDeployment(ns, "serve", 3).NodeSelector(v1alpha1.LabelPool, "bluegreen-gpu").Tolerate("bg")
	createDeployment(t, serve.Obj())
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, objtest.MinAvailable(ns, "serve", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stuck := objtest.MakeDeployment(ns, "stuck", 1).NodeSelector(v1alpha1.LabelPool, "bluegreen-gpu")
	stuck.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "bg", Operator: corev1.TolerationOpEqual, Value: "old", Effect: corev1.TaintEffectNoSchedule}}
	createDeployment(t, stuck.Obj())
	runningPods(t, ns, "app=serve", 3)
	runningPods(t, ns, "app=stuck", 1)

	next := loadBlueprint(t, poolBlueprint("bluegreen", "bg=new:NoSchedule"))
	plan, err := apply.Compute(ctx, clients, next, apply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	plan.Render(&text)
	for _, want := range []string{"± replace pool bluegreen-gpu: blue/green", "taints: bg=old:NoSchedule → bg=new:NoSchedule", "ReplicaSet " + ns + "/stuck", "does not tolerate the taint bg=new:NoSchedule"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("plan does not say %q:\n%s", want, text.String())
		}
	}
	if err := apply.Execute(ctx, clients, plan, apply.ExecOptions{}); err == nil || !strings.Contains(err.Error(), "stopped before changing anything") {
		t.Fatalf("apply with a workload that cannot move: %v, want it refused before any change", err)
	}
	if n, _ := client.CoreV1().Nodes().Get(ctx, "bluegreen-gpu-g2-0", metav1.GetOptions{}); n != nil && n.Name != "" {
		t.Fatal("the refused apply created new nodes")
	}
	if err := client.AppsV1().Deployments(ns).Delete(ctx, "stuck", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the stuck pod gone", func() (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=stuck"})
		return err == nil && len(l.Items) == 0, err
	})

	// Watch the ready count through the replacement: the budget says 2.
	// A watch sees every change to every pod in order, so no dip between
	// two looks can go unseen.
	ready := watchReady(t, ns, "serve")
	if err := applyBlueprint(ctx, next, apply.Options{}); err != nil {
		t.Fatal(err)
	}
	final := readyPods(t, ns, "serve")
	if fewest := ready.until(t, final); fewest < 2 {
		t.Errorf("during the replacement only %d pods were ready; the budget asks for 2", fewest)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=bluegreen-gpu"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
		if got := n.Spec.Taints; len(got) != 1 || got[0].Value != "new" {
			t.Errorf("node %s has taints %v, want bg=new:NoSchedule", n.Name, got)
		}
	}
	if strings.Join(names, ",") != "bluegreen-gpu-g2-0,bluegreen-gpu-g2-1" {
		t.Errorf("pool nodes after the replacement = %v, want the two of generation 2", names)
	}
	if len(final) != 3 {
		t.Fatalf("%d serve pods ready after the replacement, want 3", len(final))
	}
	for _, p := range final {
		if !strings.HasPrefix(p.Spec.NodeName, "bluegreen-gpu-g2-") {
			t.Errorf("pod %s runs on %s, not on the new nodes", p.Name, p.Spec.NodeName)
		}
	}
	plan, err = apply.Compute(ctx, clients, next, apply.Options{})
	if err != nil || !plan.Empty() {
		t.Errorf("plan after the replacement: %v, empty %v; want nothing left to do", err, plan != nil && plan.Empty())
	}
}

// A budget that never allows an eviction stops the replacement after the
// drain timeout with a message that names it, leaving every pod running;
// once the budget allows, applying again finishes the job.
func TestBlockedDrainStopsAndResumes(t *testing.T) {
	ctx := context.Background()
	removeNodesOf(t, "blocked")
	if err := applyBlueprint(ctx, loadBlueprint(t, poolBlueprint("blocked", "bg=old:NoSchedule")), apply.Options{}); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	createDeployment(t, objtest.MakeDeployment(ns, "serve", 2).NodeSelector(v1alpha1.LabelPool, "blocked-gpu").Tolerate("bg").Obj())
	pdb, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, objtest.MinAvailable(ns, "serve", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runningPods(t, ns, "app=serve", 2)

	next := loadBlueprint(t, poolBlueprint("blocked", "bg=new:NoSchedule"))
	plan, err := apply.Compute(ctx, clients, next, apply.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = apply.Execute(ctx, clients, plan, apply.ExecOptions{DrainTimeout: 3 * time.Second})
	if err == nil {
		t.Fatal("the replacement finished although the budget allows no eviction")
	}
	for _, want := range []string{"disruption budget", "still serving", "run `berth apply` again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("blocked drain error does not say %q:\n%v", want, err)
		}
	}
	if n := len(readyPods(t, ns, "serve")); n != 2 {
		t.Errorf("%d serve pods ready after the blocked drain, want both", n)
	}

	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, pdb.Name, types.MergePatchType, []byte(`{"spec":{"minAvailable":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := applyBlueprint(ctx, next, apply.Options{}); err != nil {
		t.Fatalf("applying again once the budget allows: %v", err)
	}
	for _, p := range readyPods(t, ns, "serve") {
		if !strings.HasPrefix(p.Spec.NodeName, "blocked-gpu-g2-") {
			t.Errorf("pod %s runs on %s after the resumed replacement", p.Name, p.Spec.NodeName)
		}
	}
	if n := len(readyPods(t, ns, "serve")); n != 2 {
		t.Errorf("%d serve pods ready after the resumed replacement, want 2", n)
	}
}

// readyWatch follows an app's ready pods through a watch and keeps the
// fewest it saw ready at once.
type readyWatch struct {
	mu sync.Mutex
	// ready are the pods ready in the last event seen; fewest is the
	// smallest len(ready) since the watch began; err ends the watch.
	ready  map[string]bool
	fewest int
	err    error
}

// watchReady lists the app's pods and, until the test ends, follows
// every change to them from that list on.
func watchReady(t *testing.T, ns, app string) *readyWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sel := metav1.ListOptions{LabelSelector: "app=" + app}
	l, err := client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = sel.LabelSelector
		return client.CoreV1().Pods(ns).Watch(ctx, o)
	}}
	// A RetryWatcher resumes from the last event it delivered when the
	// API server closes the stream, so no event is lost.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, l.ResourceVersion, lw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); w.Stop() })
	r := &readyWatch{ready: map[string]bool{}}
	for i := range l.Items {
		r.see(&l.Items[i], false)
	}
	r.fewest = len(r.ready)
	go func() {
		for ev := range w.ResultChan() {
			r.mu.Lock()
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				r.see(ev.Object.(*corev1.Pod), ev.Type == watch.Deleted)
			case watch.Error:
				r.err = apierrors.FromObject(ev.Object)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *readyWatch) see(p *corev1.Pod, deleted bool) {
	if !deleted && p.DeletionTimestamp == nil && isPodReady(p) {
		r.ready[p.Name] = true
	} else {
		delete(r.ready, p.Name)
	}
	r.fewest = min(r.fewest, len(r.ready))
}

// until waits until the pods the watch has seen ready are exactly final,
// the pods ready now, and returns the fewest ready at any moment before.
// Each of final became ready after the eviction that made room for it,
// so by then the watch has seen every dip.
func (r *readyWatch) until(t *testing.T, final []corev1.Pod) int {
	t.Helper()
	want := map[string]bool{}
	for _, p := range final {
		want[p.Name] = true
	}
	eventually(t, time.Minute, "the watch to see the ready pods", func() (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return maps.Equal(r.ready, want), r.err
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fewest
}
