package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/audit"
)

// gpuX4Taint is the multi-GPU pool's own taint: only that pool carries
// it, so a device plugin that stops tolerating it leaves the other GPU
// pools' GPUs alone.
var gpuX4Taint = corev1.Taint{Key: "gpu-x4", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// A GPU node advertises its GPUs only while the device plugin runs on
// it. `berth up` installed the plugin, so every GPU node starts with its
// GPUs; the pods the rolling updates below recreate are admitted under
// the blueprint's guardrails (kube-system is a system namespace), or the
// GPUs would not come back. A plugin that
// does not tolerate a pool's taint leaves that pool's GPUs invisible: a
// GPU pod waits there, Insufficient nvidia.com/gpu, and `berth audit`
// names the pool, the taint and the toleration to add. Tolerating it
// again brings the GPUs back and the pod runs.
//
// The test breaks the shared plugin, but only for the gpu-x4 pool (its
// taint is its own), and does not run in parallel: Go runs a top-level
// test that does not call t.Parallel alone, so no other test sees the
// pool without GPUs. The cleanup restores the tolerations and waits until
// every GPU node advertises its GPUs again.
func TestDevicePluginToleration(t *testing.T) {
	ctx := context.Background()
	plugin := bp.Spec.DevicePlugin
	allGPUsAdvertised(t)
	ds, err := client.AppsV1().DaemonSets(plugin.Namespace).Get(ctx, plugin.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("berth up installed no device plugin: %v", err)
	}
	if ds.Status.NumberReady == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
		t.Fatalf("device plugin ready on %d of %d GPU nodes", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}

	restore := ds.Spec.Template.Spec.Tolerations
	var kept []corev1.Toleration
	for _, tol := range restore {
		if !tol.ToleratesTaint(klog.Background(), &gpuX4Taint, false) {
			kept = append(kept, tol)
		}
	}
	if len(kept) == len(restore) {
		t.Fatalf("the device plugin's tolerations %v do not tolerate %s", restore, gpuX4Taint.ToString())
	}
	patchTolerations(t, ds, kept)
	t.Cleanup(func() {
		patchTolerations(t, ds, restore)
		allGPUsAdvertised(t)
	})

	x4 := poolNodes(t, "gpu-x4")
	eventually(t, 2*time.Minute, "the gpu-x4 nodes to advertise 0 GPUs", func() (bool, error) {
		for _, name := range x4 {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			gpus, ok := n.Status.Allocatable["nvidia.com/gpu"]
			if !ok || !gpus.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})

	clearPods(t, gpuLab)
	pod := anyGPUPod(gpuLab, "wants-a-gpu", "llm-high")
	pod.Spec.NodeSelector = map[string]string{v1alpha1.LabelPool: "gpu-x4"}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: gpuX4Taint.Key, Operator: corev1.TolerationOpExists, Effect: gpuX4Taint.Effect})
	if _, err := client.CoreV1().Pods(gpuLab).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the GPU pod to wait, Insufficient nvidia.com/gpu", func() (bool, error) {
		p, err := client.CoreV1().Pods(gpuLab).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := scheduledCondition(p)
		if p.Spec.NodeName != "" {
			t.Fatalf("the GPU pod was placed on %s, whose GPUs are not advertised", p.Spec.NodeName)
		}
		return p.Status.Phase == corev1.PodPending && c != nil && c.Reason == corev1.PodReasonUnschedulable && strings.Contains(c.Message, "Insufficient nvidia.com/gpu"), nil
	})

	home := t.TempDir()
	if err := os.Symlink(kubeconfig, filepath.Join(home, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	r, code := auditJSON(t, home, "-n", plugin.Namespace, "-f", "testdata/e2e.yaml")
	if code != 1 {
		t.Errorf("audit exited %d, want 1", code)
	}
	var onPlugin, onNode bool
	for _, f := range r.Findings {
		if f.Rule != v1alpha1.RuleDevicePlugin {
			continue
		}
		switch f.Object {
		case audit.Object{Kind: "DaemonSet", Namespace: plugin.Namespace, Name: plugin.Name}:
			onPlugin = strings.Contains(f.Message, "GPU pool gpu-x4") && strings.Contains(f.Message, gpuX4Taint.ToString()) &&
				strings.Contains(f.Fix, "{key: gpu-x4, operator: Exists, effect: NoSchedule}")
			if strings.Contains(f.Message, "pool gpu ") || strings.Contains(f.Message, "spot-gpu") {
				t.Errorf("audit blames the pools the plugin still tolerates: %s", f.Message)
			}
		case audit.Object{Kind: "Node", Name: x4[0]}:
			onNode = strings.Contains(f.Message, "gpu-x4-0, gpu-x4-1 of 2 node(s) advertise no GPUs")
		}
	}
	if !onPlugin || !onNode {
		t.Errorf("audit does not report the plugin's missing toleration (%v) and the gpu-x4 nodes without GPUs (%v); findings: %+v", onPlugin, onNode, r.Findings)
	}

	// berth why names the plugin, the taint and the toleration to add.
	why := mustBerth(t, home, "why", pod.Name, "-n", gpuLab, "-f", "testdata/e2e.yaml")
	if !strings.Contains(why, "does not tolerate pool gpu-x4's taint "+gpuX4Taint.ToString()) || !strings.Contains(why, plugin.Name) {
		t.Errorf("berth why on the GPU pod does not name the device plugin's missing toleration:\n%s", why)
	}

	patchTolerations(t, ds, restore)
	allGPUsAdvertised(t)
	eventually(t, time.Minute, "the GPU pod to run", func() (bool, error) {
		p, err := client.CoreV1().Pods(gpuLab).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && strings.HasPrefix(p.Spec.NodeName, "gpu-x4"), err
	})
}

// The simulated kubelets take the device plugin from the blueprint the
// cluster last recorded, not from the one it started with: a `berth
// apply` that names another plugin reaches the running GPU nodes. Their
// GPUs go, as the old plugin's pods no longer count, and come back when
// the new plugin's pods run.
//
// The test moves every GPU node of the blueprint to another plugin, so
// it does not run in parallel (see TestDevicePluginToleration). The
// cleanup applies the e2e blueprint again, deletes the new plugin and
// waits until every GPU node advertises its GPUs.
func TestDevicePluginFollowsApply(t *testing.T) {
	ctx := context.Background()
	plugin := bp.Spec.DevicePlugin
	allGPUsAdvertised(t)
	installed, err := client.AppsV1().DaemonSets(plugin.Namespace).Get(ctx, plugin.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("berth up installed no device plugin: %v", err)
	}
	const next = "gpu-plugin-next"
	raw, err := json.Marshal(bp)
	if err != nil {
		t.Fatal(err)
	}
	var moved v1alpha1.Blueprint
	if err := json.Unmarshal(raw, &moved); err != nil {
		t.Fatal(err)
	}
	moved.Spec.DevicePlugin.Name = next
	t.Cleanup(func() {
		if err := applyBlueprint(ctx, bp, apply.Options{}); err != nil {
			t.Errorf("applying the e2e blueprint again: %v", err)
		}
		if err := client.AppsV1().DaemonSets(plugin.Namespace).Delete(ctx, next, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the new plugin: %v", err)
		}
		allGPUsAdvertised(t)
	})

	if err := applyBlueprint(ctx, &moved, apply.Options{}); err != nil {
		t.Fatalf("applying the blueprint with devicePlugin.name %s: %v", next, err)
	}
	eventually(t, 2*time.Minute, "the GPU nodes to advertise 0 GPUs (the old plugin's pods no longer count)", func() (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelGPUCount})
		if err != nil {
			return false, err
		}
		for _, n := range list.Items {
			if gpus := n.Status.Allocatable[v1alpha1.DefaultGPUResource]; !gpus.IsZero() {
				return false, nil
			}
		}
		return len(list.Items) > 0, nil
	})

	// The new plugin, as whoever installs it would: the installed one's
	// DaemonSet under the new name.
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: plugin.Namespace, Name: next, Labels: installed.Labels},
		Spec:       *installed.Spec.DeepCopy(),
	}
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"name": next}}
	ds.Spec.Template.Labels = map[string]string{"name": next}
	if _, err := client.AppsV1().DaemonSets(plugin.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	allGPUsAdvertised(t)
}

// allGPUsAdvertised waits until every GPU node advertises all its GPUs.
func allGPUsAdvertised(t *testing.T) {
	t.Helper()
	eventually(t, 2*time.Minute, "every GPU node to advertise its GPUs", func() (bool, error) {
		list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelGPUCount})
		if err != nil {
			return false, err
		}
		for _, n := range list.Items {
			want := n.Labels[v1alpha1.LabelGPUCount]
			got := n.Status.Allocatable[v1alpha1.DefaultGPUResource]
			if got.String() != want {
				return false, nil
			}
		}
		return len(list.Items) > 0, nil
	})
}

func patchTolerations(t *testing.T, ds *appsv1.DaemonSet, tolerations []corev1.Toleration) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"tolerations": tolerations}}}})
	if _, err := client.AppsV1().DaemonSets(ds.Namespace).Patch(context.Background(), ds.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the device plugin's tolerations: %v", err)
	}
}

// poolNodes names the nodes of a pool.
func poolNodes(t *testing.T, pool string) []string {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=" + pool})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("nodes of pool %s: %v (%d)", pool, err, len(list.Items))
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out
}

// TestDevicePluginImageFollowsApply: a `berth apply` that names another
// device-plugin image reaches the DaemonSet `berth up` installed (the
// in-process controller applies the recorded blueprint's plugin), and
// the GPU nodes advertise their GPUs again once its pods roll.
func TestDevicePluginImageFollowsApply(t *testing.T) {
	ctx := context.Background()
	plugin := bp.Spec.DevicePlugin
	allGPUsAdvertised(t)
	raw, err := json.Marshal(bp)
	if err != nil {
		t.Fatal(err)
	}
	var next v1alpha1.Blueprint
	if err := json.Unmarshal(raw, &next); err != nil {
		t.Fatal(err)
	}
	const image = "nvcr.io/nvidia/k8s-device-plugin:v0.0.0-e2e"
	next.Spec.DevicePlugin.Image = image
	t.Cleanup(func() {
		if err := applyBlueprint(ctx, bp, apply.Options{}); err != nil {
			t.Errorf("applying the e2e blueprint again: %v", err)
		}
		eventually(t, 2*time.Minute, "the device plugin's image to go back", func() (bool, error) {
			ds, err := client.AppsV1().DaemonSets(plugin.Namespace).Get(ctx, plugin.Name, metav1.GetOptions{})
			return err == nil && ds.Spec.Template.Spec.Containers[0].Image != image, err
		})
		allGPUsAdvertised(t)
	})
	if err := applyBlueprint(ctx, &next, apply.Options{}); err != nil {
		t.Fatalf("applying the blueprint with devicePlugin.image %s: %v", image, err)
	}
	eventually(t, 2*time.Minute, "the device plugin's DaemonSet to run image "+image, func() (bool, error) {
		ds, err := client.AppsV1().DaemonSets(plugin.Namespace).Get(ctx, plugin.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ds.Spec.Template.Spec.Containers[0].Image == image, nil
	})
	allGPUsAdvertised(t)
}
