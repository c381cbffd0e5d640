package autoscaler

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/simulate"
)

// t0 is when every test's clock starts; nodes and pods are an hour
// older, so no node counts as young and no pod as new.
var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// world is an autoscaler over an in-memory cluster: the blueprint's
// pools, nodes made by pools.NewNode (kept in a fake clientset, so that
// the autoscaler's writes succeed and can be read back), and pods,
// PodDisruptionBudgets and DaemonSets held here. Every verdict on fit is
// internal/simulate's; the clientset only records writes.
type world struct {
	t          testing.TB
	bp         *v1alpha1.Blueprint
	clock      *clocktesting.FakeClock
	client     *fake.Clientset
	rec        *record.FakeRecorder
	c          *Controller
	pods       []*corev1.Pod
	budgets    []*policyv1.PodDisruptionBudget
	daemonSets []*appsv1.DaemonSet
	claims     []*corev1.PersistentVolumeClaim
	storage    *simulate.Storage
	// groups persist across views, as the Controller's do.
	groups map[string]*group
}

// newWorld parses a blueprint (spec only; the header is added) and
// starts the pools that have a count at that size. seed pins the random
// expander.
func newWorld(t testing.TB, spec string, seed uint64) *world {
	t.Helper()
	doc := "apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: t}\nspec:\n" + spec
	bp, _, err := blueprint.Parse("t.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("blueprint: %v", err)
	}
	w := &world{t: t, bp: bp, clock: clocktesting.NewFakeClock(t0), client: fake.NewClientset(), groups: map[string]*group{}}
	w.rec = record.NewFakeRecorder(100000)
	w.c = NewController(w.client, Options{Seed: seed, Clock: w.clock})
	w.c.recorder = w.rec
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		n := 0
		switch {
		case p.Count != nil:
			n = int(*p.Count)
		case p.Autoscale != nil:
			n = int(p.Autoscale.Min)
		}
		w.addNodes(p.Name, n)
	}
	return w
}

func (w *world) pool(name string) *v1alpha1.Pool {
	for i := range w.bp.Spec.Pools {
		if w.bp.Spec.Pools[i].Name == name {
			return &w.bp.Spec.Pools[i]
		}
	}
	w.t.Fatalf("no pool %s", name)
	return nil
}

func (w *world) profile() *v1alpha1.AutoscalerProfile { return w.bp.Spec.Autoscaler }

// addNodes registers n more Ready nodes of a pool, an hour old, and
// returns them.
func (w *world) addNodes(pool string, n int) []*corev1.Node {
	w.t.Helper()
	p := w.pool(pool)
	var out []*corev1.Node
	for _, node := range pools.NextNodes(w.bp, p, pools.NodesOf(pool, w.nodes()), n) {
		node.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		created, err := w.client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		out = append(out, created)
	}
	return out
}

// nodes are the nodes in the clientset, by name.
func (w *world) nodes() []*corev1.Node {
	list, err := w.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []*corev1.Node
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	slices.SortFunc(out, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (w *world) nodeNames(pool string) []string {
	var out []string
	for _, n := range pools.NodesOf(pool, w.nodes()) {
		out = append(out, n.Name)
	}
	return out
}

// ready makes registered nodes Ready and an hour old, as the nodes the
// autoscaler registers become once their kubelet starts.
func (w *world) ready(names ...string) {
	w.t.Helper()
	for _, name := range names {
		n := w.node(name)
		n.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if _, err := w.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) node(name string) *corev1.Node {
	w.t.Helper()
	n, err := w.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return n
}

// view is the scan's picture of the world, built as Controller.view
// builds it from its informers.
func (w *world) view() *view {
	v := &view{now: w.clock.Now(), profile: w.profile(), nodes: w.nodes(), pods: w.pods, budgets: w.budgets, daemonSets: w.daemonSets,
		claims: w.claims, storage: w.storage}
	for i := range w.bp.Spec.Pools {
		p := &w.bp.Spec.Pools[i]
		g := w.groups[p.Name]
		if g == nil {
			g = &group{}
			w.groups[p.Name] = g
		}
		g.bp, g.pool = w.bp, p
		g.nodes = pools.NodesOf(p.Name, v.nodes)
		g.arrived()
		v.groups = append(v.groups, g)
	}
	return v
}

func (w *world) group(v *view, pool string) *group {
	for _, g := range v.groups {
		if g.name() == pool {
			return g
		}
	}
	w.t.Fatalf("no group %s", pool)
	return nil
}

func (w *world) add(pods ...*corev1.Pod) { w.pods = append(w.pods, pods...) }

// events drains the recorder: "Type Reason message" each.
func (w *world) events() []string {
	var out []string
	for {
		select {
		case e := <-w.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// replica is a pod of app's ReplicaSet (so that scale-down may move it),
// labelled app=app, an hour old, requesting nothing.
func replica(name, app string) *objtest.PodWrapper {
	return objtest.MakePod("team-a", name).Label("app", app).Owner("ReplicaSet", app).Created(t0.Add(-time.Hour))
}

// pendingPods are n identical pending pods of one app.
func pendingPods(app string, n int, shape func(*objtest.PodWrapper) *objtest.PodWrapper) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range n {
		out[i] = shape(replica(app+"-"+strconv.Itoa(i), app).Unschedulable("")).Obj()
	}
	return out
}

// budget is a PodDisruptionBudget over app's pods allowing n disruptions.
func budget(ns, app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// daemonSet runs a pod requesting cpu on every node that tolerates it.
func daemonSet(name, cpu string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: types.UID("ds-" + name)},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		}},
	}
}
