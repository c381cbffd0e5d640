package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/budgets"
	"berth.io/berth/internal/objtest"
)

// Behaviour 12: inference keeps off nodes where training uses the same
// GPUs. On the four-GPU pool, with a training pod holding one GPU of one
// node, four inference pods all go to the other node, although the
// scheduler's own scoring (least allocated) would put them on the node
// with more free GPUs: only the class's anti-affinity sends them there.
func TestInferenceKeepsOffTrainingNodes(t *testing.T) {
	ctx := context.Background()
	ns := gpuLab
	clearPods(t, ns)
	train := anyGPUPod(ns, "finetune", "finetune-low")
	if _, err := client.CoreV1().Pods(ns).Create(ctx, train, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var trainNode string
	eventually(t, time.Minute, "the training pod to run", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "finetune", metav1.GetOptions{})
		trainNode = p.Spec.NodeName
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	for i := range 4 {
		name := fmt.Sprintf("llm-%d", i)
		if _, err := client.CoreV1().Pods(ns).Create(ctx, anyGPUPod(ns, name, "llm-high"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var node string
		eventually(t, time.Minute, name+" to run", func() (bool, error) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			node = p.Spec.NodeName
			return err == nil && p.Status.Phase == corev1.PodRunning, err
		})
		if node == trainNode {
			t.Errorf("inference pod %s runs on %s beside the training pod, with GPUs free on the other node", name, node)
		}
		if i == 0 && node[:len("gpu-x4")] != "gpu-x4" {
			t.Fatalf("inference pod on %s, want the gpu-x4 pool", node)
		}
	}
}

// Each inference service keeps its own minimum through a drain: two
// Deployments of the class in one namespace each get a budget of their
// own, so evicting every pod of both (the cpu pool cordoned, as a drain
// does) takes at most one replica of each. One budget over the whole
// class would have let one service lose both.
func TestEachServiceKeepsItsOwnBudget(t *testing.T) {
	ctx := context.Background()
	ns := "team-a"
	names := []string{"search", "ranker"}
	for _, name := range names {
		d := objtest.MakeDeployment(ns, name, 2).Obj()
		d.Labels[v1alpha1.LabelClass] = "inference"
		if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	for _, name := range names {
		budget := budgets.Name("Deployment", name)
		eventually(t, time.Minute, "budget "+budget+" to allow one disruption of two", func() (bool, error) {
			b, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, budget, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			return b.Status.ObservedGeneration == b.Generation && b.Status.CurrentHealthy == 2 && b.Status.DisruptionsAllowed == 1, nil
		})
		b, _ := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, budget, metav1.GetOptions{})
		if b.Spec.Selector.MatchLabels["app"] != name || b.Spec.MinAvailable.IntValue() != 1 || len(b.OwnerReferences) != 1 || b.OwnerReferences[0].Name != name {
			t.Errorf("budget %s = selector %v, minAvailable %v, owners %v; want the Deployment's pods, 1, owned by it", budget, b.Spec.Selector, b.Spec.MinAvailable, b.OwnerReferences)
		}
	}
	cordonPool(t, "cpu")
	evicted := map[string]int{}
	for _, name := range names {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 2 {
			t.Fatalf("%d pods of %s, want 2", len(pods.Items), name)
		}
		for _, p := range pods.Items {
			err := client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}})
			switch {
			case err == nil:
				evicted[name]++
			case !apierrors.IsTooManyRequests(err):
				t.Errorf("evicting %s: %v, want success or 429 from its budget", p.Name, err)
			}
		}
	}
	for _, name := range names {
		if evicted[name] != 1 {
			t.Errorf("%d of %s's 2 pods evicted in the drain, want exactly 1 (its own budget keeps 1)", evicted[name], name)
		}
	}
}

// cordonPool marks a pool's nodes unschedulable until the test ends.
func cordonPool(t *testing.T, pool string) {
	t.Helper()
	ctx := context.Background()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "berth.io/pool=" + pool})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes of pool %s: %d, %v", pool, len(nodes.Items), err)
	}
	set := func(name string, off bool) error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = off
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	}
	for _, n := range nodes.Items {
		if err := set(n.Name, true); err != nil {
			t.Fatalf("cordoning %s: %v", n.Name, err)
		}
		t.Cleanup(func() {
			if err := set(n.Name, false); err != nil {
				t.Errorf("uncordoning %s: %v", n.Name, err)
			}
		})
	}
}
