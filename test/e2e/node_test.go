package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/internal/pools"
)

// isolatedNode adds one more node to the cpu pool, tainted so that only
// this test's pods go there, and removes it when the test ends.
func isolatedNode(t *testing.T, index int) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	var pool = &bp.Spec.Pools[1]
	if pool.Name != "cpu" {
		t.Fatalf("testdata/e2e.yaml: pools[1] is %q, want cpu", pool.Name)
	}
	n := pools.NewNode(bp, pool, index)
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "e2e/isolated", Value: t.Name(), Effect: corev1.TaintEffectNoSchedule})
	n, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() { client.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	eventually(t, time.Minute, "node "+n.Name+" Ready", func() (bool, error) {
		got, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil && nodeReady(got) == corev1.ConditionTrue, err
	})
	return n
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func podOn(ns, name string, node *corev1.Node) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node.Name},
			Tolerations:  []corev1.Toleration{{Key: "e2e/isolated", Operator: corev1.TolerationOpExists}},
			Containers:   []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
}

// A node's allocatable is its capacity less the pool's reservation, and
// follows its capacity when a client (a device plugin) changes it.
func TestAllocatableFollowsCapacity(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	node := isolatedNode(t, 10)
	// The cpu pool is 16 cores and 64Gi, reserving 500m and 1Gi.
	wantCPU, wantMem := resource.MustParse("15500m"), resource.MustParse("63Gi")
	if got := node.Status.Allocatable[corev1.ResourceCPU]; got.Cmp(wantCPU) != 0 {
		t.Errorf("allocatable cpu = %s, want %s", got.String(), wantCPU.String())
	}
	if got := node.Status.Allocatable[corev1.ResourceMemory]; got.Cmp(wantMem) != 0 {
		t.Errorf("allocatable memory = %s, want %s", got.String(), wantMem.String())
	}

	// What the NVIDIA device plugin does when it registers four GPUs.
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": map[string]string{"nvidia.com/gpu": "4"}}})
	if _, err := client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "allocatable nvidia.com/gpu to follow capacity", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		gpus := n.Status.Allocatable["nvidia.com/gpu"]
		cpu := n.Status.Allocatable[corev1.ResourceCPU]
		return gpus.Value() == 4 && cpu.Cmp(wantCPU) == 0, nil
	})

	// And the scheduler sees it: a four-GPU pod fits there.
	pod := podOn(ns, "four-gpus", node)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the four-GPU pod to run on "+node.Name, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning, err
	})
}
