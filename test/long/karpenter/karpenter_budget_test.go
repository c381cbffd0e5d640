//go:build long

package karpenter_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/karpenter"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/test/harness"
	"k8s.io/utils/ptr"
)

// budgetBlocks sets the spot GPU NodePool's disruption budget to nodes
// "0", as a team freezing a pool through a demo would: the node a
// finished Job leaves empty outlives consolidateAfter (5 s), Karpenter's
// disruption pass (every 10 s) and its 15 s check, and Karpenter says
// the budget blocks it; lifted back to Karpenter's default of 10%, the
// node goes.
func (k *karpEnv) budgetBlocks(t *testing.T) {
	ctx := context.Background()
	setBudgets := func(budgets string) {
		t.Helper()
		patch := `{"spec":{"disruption":{"budgets":` + budgets + `}}}`
		if _, err := k.dyn.Resource(karpenter.NodePoolResource).Patch(ctx, "spot-gpu", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setBudgets(`[{"nodes":"0"}]`)
	defer setBudgets(`[{"nodes":"10%"}]`)
	if st, _ := harness.Berth(t, k.home, "status", "--context", "berth-karp"); !lineHas(st, "spot-gpu", "nodes 0") {
		t.Errorf("berth status does not show spot-gpu's budget of nodes 0:\n%s", st)
	}
	job := objtest.TrainingJob("team-a", "frozen")
	job.Spec.Template.Annotations = map[string]string{"berth.io/duration": "3s"}
	if _, err := k.c.BatchV1().Jobs("team-a").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.c.BatchV1().Jobs("team-a").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	pod := k.jobPod("frozen", corev1.PodSucceeded)
	done := time.Now()
	k.eventually(time.Minute, "Karpenter to say a budget blocks spot-gpu's disruption", func() (bool, error) {
		evs, err := k.c.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=DisruptionBlocked"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if (e.InvolvedObject.Name == "spot-gpu" || e.InvolvedObject.Name == pod.Spec.NodeName) && strings.Contains(e.Message, "blocking budget") {
				return true, nil
			}
		}
		return false, nil
	})
	// The event is Karpenter's disruption pass finding the node empty
	// past consolidateAfter and held by the budget: the node is still
	// there.
	if _, err := k.c.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{}); err != nil {
		t.Fatalf("node %s went under a budget of nodes 0: %v", pod.Spec.NodeName, err)
	}
	setBudgets(`[{"nodes":"10%"}]`)
	lifted := time.Now()
	k.eventually(2*time.Minute, "the empty node consolidated once the budget is lifted", func() (bool, error) {
		_, err := k.c.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		return err != nil, nil
	})
	t.Logf("node %s held empty %s under nodes 0; gone %s after the budget was lifted", pod.Spec.NodeName, lifted.Sub(done).Round(time.Second), time.Since(lifted).Round(time.Second))
}

// lineHas reports whether a line of out starts with first and holds want.
func lineHas(out, first, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == first && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

// machineDrift runs an inference service of three replicas spread over
// the zones on the cpu NodePool, with a PodDisruptionBudget of
// minAvailable 2, then gives the pool a bigger machine and applies the
// blueprint: the NodePool's instance type changes, so each NodeClaim no
// longer meets its requirements and drifts. The NodePool's budget is
// opened to 100% for the test, so that the PodDisruptionBudget alone
// holds: never fewer than two replicas ready, however many nodes
// Karpenter disrupts at once (its evictions go through the eviction API,
// which the PodDisruptionBudget answers).
func (k *karpEnv) machineDrift(t *testing.T) {
	ctx := context.Background()
	d := objtest.MakeDeployment("team-b", "serve", 3).ZoneSpread().Obj()
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(1))
	// Limits as well: the team's LimitRange gives a container that names
	// none a limit of 1 CPU and 1Gi, below these requests.
	size := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: size, Limits: size}
	if _, err := k.c.PolicyV1().PodDisruptionBudgets("team-b").Create(ctx, objtest.MinAvailable("team-b", "serve", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.c.PolicyV1().PodDisruptionBudgets("team-b").Delete(ctx, "serve", metav1.DeleteOptions{})
	if _, err := k.c.AppsV1().Deployments("team-b").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.c.AppsV1().Deployments("team-b").Delete(ctx, "serve", metav1.DeleteOptions{})
	oldNodes := map[string]bool{}
	k.eventually(3*time.Minute, "three serve replicas ready on cpu nodes in three zones", func() (bool, error) {
		pods, err := k.c.CoreV1().Pods("team-b").List(ctx, metav1.ListOptions{LabelSelector: "app=serve"})
		if err != nil {
			return false, err
		}
		clear(oldNodes)
		for _, p := range pods.Items {
			if healthy(&p) {
				oldNodes[p.Spec.NodeName] = true
			}
		}
		return len(oldNodes) == 3, nil
	})
	var pdb *policyv1.PodDisruptionBudget
	k.eventually(30*time.Second, "the PodDisruptionBudget to allow one disruption", func() (bool, error) {
		var err error
		pdb, err = k.c.PolicyV1().PodDisruptionBudgets("team-b").Get(ctx, "serve", metav1.GetOptions{})
		return err == nil && pdb.Status.DisruptionsAllowed == 1, err
	})
	oldType := ""
	for name := range oldNodes {
		n, err := k.c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels[v1alpha1.LabelKarpenterNodePool] != "cpu" {
			t.Fatalf("a serve replica runs on node %s of NodePool %q; want cpu", name, n.Labels[v1alpha1.LabelKarpenterNodePool])
		}
		oldType = n.Labels[corev1.LabelInstanceTypeStable]
	}

	// The NodePool's own budget at 100%, so that only the PDB holds the
	// replicas: at the default 10% of three nodes, one node at a time
	// would keep two of three replicas by itself.
	patch := `{"spec":{"disruption":{"budgets":[{"nodes":"100%"}]}}}`
	if _, err := k.dyn.Resource(karpenter.NodePoolResource).Patch(ctx, "cpu", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.dyn.Resource(karpenter.NodePoolResource).Patch(ctx, "cpu", types.MergePatchType, []byte(`{"spec":{"disruption":{"budgets":[{"nodes":"10%"}]}}}`), metav1.PatchOptions{})

	// Watch the replicas and the disrupted nodes from before the change
	// until the end.
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	w := newBudgetWatch(t, watchCtx, k)

	const from, to = "  - name: cpu\n    machine: {cpu: 16, memory: 64Gi}\n", "  - name: cpu\n    machine: {cpu: 32, memory: 128Gi}\n"
	if !strings.Contains(k.doc, from) {
		t.Fatal("the retail template changed: cannot find the cpu pool's machine")
	}
	k.doc = strings.Replace(k.doc, from, to, 1)
	if err := os.WriteFile(k.bpFile, []byte(k.doc), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	harness.MustBerth(t, k.home, "apply", "-f", k.bpFile, "--context", "berth-karp")
	np, err := k.dyn.Resource(karpenter.NodePoolResource).Get(ctx, "cpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newType := ""
	reqs, _, _ := unstructured.NestedSlice(np.Object, "spec", "template", "spec", "requirements")
	for _, r := range reqs {
		if m, _ := r.(map[string]any); m["key"] == corev1.LabelInstanceTypeStable {
			if vs, _ := m["values"].([]any); len(vs) == 1 {
				newType, _ = vs[0].(string)
			}
		}
	}
	if newType == "" || newType == oldType {
		t.Fatalf("the cpu NodePool asks for instance type %q after the apply; want one other than %q", newType, oldType)
	}
	k.eventually(8*time.Minute, "three serve replicas ready on "+newType+" nodes and the old nodes gone", func() (bool, error) {
		pods, err := k.c.CoreV1().Pods("team-b").List(ctx, metav1.ListOptions{LabelSelector: "app=serve"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			if !healthy(&p) {
				continue
			}
			n, err := k.c.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil || n.Labels[corev1.LabelInstanceTypeStable] != newType {
				return false, nil
			}
			ready++
		}
		for name := range oldNodes {
			if _, err := k.c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
				return false, nil
			}
		}
		return ready == 3, nil
	})
	stopWatching()
	least, most, seen := w.result()
	if seen <= 3 {
		t.Errorf("the watch saw %d serve pods; a drift of all three nodes makes new ones, so it saw nothing of the evictions", seen)
	}
	if least < 2 {
		t.Errorf("%d serve replica(s) ready at the least during the drift; the PodDisruptionBudget's minAvailable is 2", least)
	}
	if most == 0 {
		t.Errorf("no cpu node was seen disrupted (tainted %s): the watch saw nothing of the drift", karpDisruptedTaint)
	}
	t.Logf("%s → %s: three nodes replaced in %s; at the least %d replicas ready, at the most %d node(s) disrupted at once (the NodePool's budget allows 3)",
		oldType, newType, time.Since(start).Round(time.Second), least, most)
}

// karpDisruptedTaint is the taint Karpenter puts on a node it is
// disrupting, before it drains it.
const karpDisruptedTaint = "karpenter.sh/disrupted"

// budgetWatch follows the serve pods and the cpu NodePool's nodes and
// keeps the fewest healthy replicas and the most disrupted nodes seen.
type budgetWatch struct {
	mu          sync.Mutex
	pods        map[string]bool // name: healthy
	nodes       map[string]bool // name: disrupted
	least, most int
	done        chan struct{}
}

func newBudgetWatch(t *testing.T, ctx context.Context, k *karpEnv) *budgetWatch {
	t.Helper()
	pw, err := k.c.CoreV1().Pods("team-b").Watch(ctx, metav1.ListOptions{LabelSelector: "app=serve"})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := k.c.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelKarpenterNodePool + "=cpu"})
	if err != nil {
		t.Fatal(err)
	}
	w := &budgetWatch{pods: map[string]bool{}, nodes: map[string]bool{}, least: 3, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer pw.Stop()
		defer nw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-pw.ResultChan():
				if !ok {
					return
				}
				if p, isPod := ev.Object.(*corev1.Pod); isPod {
					w.update(w.pods, p.Name, ev.Type != watch.Deleted && healthy(p))
				}
			case ev, ok := <-nw.ResultChan():
				if !ok {
					return
				}
				if n, isNode := ev.Object.(*corev1.Node); isNode {
					w.update(w.nodes, n.Name, ev.Type != watch.Deleted && hasTaint(n, karpDisruptedTaint))
				}
			}
		}
	}()
	return w
}

func (w *budgetWatch) update(m map[string]bool, name string, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m[name] = on
	healthyPods, disrupted := 0, 0
	for _, h := range w.pods {
		if h {
			healthyPods++
		}
	}
	for _, d := range w.nodes {
		if d {
			disrupted++
		}
	}
	// The watch starts by listing each object once: count only once it
	// has seen the three replicas.
	if len(w.pods) >= 3 {
		w.least = min(w.least, healthyPods)
	}
	w.most = max(w.most, disrupted)
}

// result is the fewest healthy replicas and the most disrupted nodes
// seen, and how many pods the watch saw in all.
func (w *budgetWatch) result() (least, most, pods int) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.least, w.most, len(w.pods)
}

// healthy is a pod the PodDisruptionBudget counts: Ready and not being
// deleted.
func healthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// audit runs berth audit on the Karpenter cluster, which reads the live
// NodePools as it reads exported ones: the NodePools berth applied pass;
// the gpu NodePool with its taints removed by hand is found making GPU
// nodes any pod may take, named by its field; berth apply puts the
// taints back.
func (k *karpEnv) audit(t *testing.T) {
	ctx := context.Background()
	const finding = "Karpenter NodePool gpu makes GPU nodes with no GPU taint"
	if out, _ := harness.Berth(t, k.home, "audit", "--context", "berth-karp"); strings.Contains(out, "Karpenter NodePool") {
		t.Errorf("berth audit finds fault with the NodePools berth applied:\n%s", out)
	}
	patch := `{"spec":{"template":{"spec":{"taints":null}}}}`
	if _, err := k.dyn.Resource(karpenter.NodePoolResource).Patch(ctx, "gpu", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, _ := harness.Berth(t, k.home, "audit", "--context", "berth-karp")
	if !strings.Contains(out, finding) || !strings.Contains(out, "spec.template.spec.taints") {
		t.Errorf("berth audit of the gpu NodePool without taints does not say %q at spec.template.spec.taints:\n%s", finding, out)
	}
	// The NodePools are in the plan: the change by hand is one to undo.
	plan, code := harness.Berth(t, k.home, "plan", "-f", k.bpFile, "--context", "berth-karp")
	if code != 2 || !strings.Contains(plan, "update NodePool gpu") || !strings.Contains(plan, "spec.template.spec.taints") {
		t.Errorf("berth plan after the gpu NodePool's taints were removed by hand: exit %d, want 2 and an update of NodePool gpu at spec.template.spec.taints:\n%s", code, plan)
	}
	applied := harness.MustBerth(t, k.home, "apply", "-f", k.bpFile, "--context", "berth-karp")
	if !strings.Contains(applied, "update NodePool gpu") {
		t.Errorf("berth apply does not show NodePool gpu's update in its plan:\n%s", applied)
	}
	if out, _ := harness.Berth(t, k.home, "audit", "--context", "berth-karp"); strings.Contains(out, finding) {
		t.Errorf("berth apply did not put the gpu NodePool's taints back:\n%s", out)
	}
}

// resume stops the Karpenter cluster with a training pod running on a
// NodeClaim's node and starts it again: the node, its NodeClaim and the
// pod are still there and stay (Karpenter neither launches a second node
// for the pod nor takes the first as an instance it does not know), and
// Karpenter launches nodes for new pods as before.
func (k *karpEnv) resume(t *testing.T) {
	ctx := context.Background()
	// The earlier tests' nodes go first, so that no consolidation falls
	// inside the comparison below.
	k.eventually(3*time.Minute, "the earlier tests' NodeClaims consolidated away", func() (bool, error) {
		return len(k.claimNames(t)) == 0, nil
	})
	job := objtest.TrainingJob("team-a", "across")
	job.Spec.Template.Annotations = map[string]string{"berth.io/duration": "10m"}
	if _, err := k.c.BatchV1().Jobs("team-a").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.c.BatchV1().Jobs("team-a").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	before := k.jobPod("across", corev1.PodRunning)
	claimsBefore := k.claimNames(t)
	harness.MustBerth(t, k.home, "down", "--name", "karp")
	if out := harness.MustBerth(t, k.home, "up", "-d", "-f", k.bpFile, "--name", "karp"); !strings.Contains(out, `Cluster "karp" resumed`) {
		t.Errorf("berth up of the stopped cluster did not say it resumed:\n%s", out)
	}
	// From the resume until a new Job has run on a node Karpenter
	// launched after it (its provisioner, disruption pass and garbage
	// collection of unknown instances all running by then), every
	// NodeClaim from before stays and the training pod keeps running on
	// its node: checked on every change, failed at the first.
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	claims, err := k.dyn.Resource(karpenter.NodeClaimResource).Watch(watchCtx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := k.c.CoreV1().Pods("team-a").Watch(watchCtx, metav1.ListOptions{FieldSelector: "metadata.name=" + before.Name})
	if err != nil {
		t.Fatal(err)
	}
	lost := make(chan string, 2)
	go func() {
		for ev := range claims.ResultChan() {
			if c, ok := ev.Object.(metav1.Object); ok && (ev.Type == watch.Deleted || c.GetDeletionTimestamp() != nil) && slices.Contains(claimsBefore, c.GetName()) {
				lost <- fmt.Sprintf("NodeClaim %s from before the stop was deleted after the resume", c.GetName())
				return
			}
		}
	}()
	go func() {
		for ev := range pods.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Deleted || p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != before.Spec.NodeName) {
				lost <- fmt.Sprintf("after the resume the training pod %s is %s (%s) on %q; want still Running on %s", before.Name, p.Status.Phase, ev.Type, p.Spec.NodeName, before.Spec.NodeName)
				return
			}
		}
	}()
	pod, err := k.c.CoreV1().Pods("team-a").Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil || pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName != before.Spec.NodeName {
		t.Errorf("after the resume the training pod %s is %v (err %v); want still Running on %s", before.Name, podPhase(pod), err, before.Spec.NodeName)
	}
	next := objtest.TrainingJob("team-a", "after")
	next.Spec.Template.Annotations = map[string]string{"berth.io/duration": "3s"}
	next.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelPool: "gpu"}
	if _, err := k.c.BatchV1().Jobs("team-a").Create(ctx, next, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer k.c.BatchV1().Jobs("team-a").Delete(ctx, next.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	k.eventually(2*time.Minute, "a new Job's pod to complete on a node Karpenter launched after the resume", func() (bool, error) {
		select {
		case why := <-lost:
			t.Fatal(why)
		default:
		}
		j, err := k.c.BatchV1().Jobs("team-a").Get(ctx, next.Name, metav1.GetOptions{})
		return err == nil && j.Status.Succeeded == 1, err
	})
	for _, name := range claimsBefore {
		if _, err := k.dyn.Resource(karpenter.NodeClaimResource).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("NodeClaim %s from before the stop is gone after the resume: %v", name, err)
		}
	}
}

// claimNames are the NodeClaims' names, sorted.
func (k *karpEnv) claimNames(t *testing.T) []string {
	t.Helper()
	list, err := k.dyn.Resource(karpenter.NodeClaimResource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list.Items {
		names = append(names, c.GetName())
	}
	sort.Strings(names)
	return names
}

func podPhase(p *corev1.Pod) corev1.PodPhase {
	if p == nil {
		return ""
	}
	return p.Status.Phase
}
