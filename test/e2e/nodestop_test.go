package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/kubelets"
)

// `berth node stop` stops a simulated kubelet as a machine dies: the real
// node lifecycle controller marks the node Unknown once its lease
// expires and taints it unreachable, and the taint manager evicts a pod
// that tolerates that for 5 s about 5 s later; `berth node start` brings
// the node back. Not parallel: the node is one the other tests use.
func TestNodeStopAndStart(t *testing.T) {
	ctx := context.Background()
	const node = "cpu-2"
	home := t.TempDir()
	if err := os.Symlink(kubeconfig, filepath.Join(home, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { berth(t, home, "node", "start", node) })
	ns := namespace(t)
	five := int64(5)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "brief"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five},
			},
			Containers: []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningPods(t, ns, "", 1)

	stopped := time.Now()
	out := mustBerth(t, home, "node", "stop", node)
	if !strings.Contains(out, "Stopped the kubelet of 1 node(s): "+node) {
		t.Errorf("berth node stop says:\n%s", out)
	}
	// The lease is renewed every 10 s and the controller waits 50 s
	// (node-monitor-grace-period) past the last renewal.
	var taint time.Time
	eventually(t, 2*time.Minute, node+" NotReady and tainted unreachable:NoExecute", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, tn := range n.Spec.Taints {
			if tn.Key == corev1.TaintNodeUnreachable && tn.Effect == corev1.TaintEffectNoExecute && tn.TimeAdded != nil {
				taint = tn.TimeAdded.Time
			}
		}
		return kubelets.Ready(n) == corev1.ConditionUnknown && !taint.IsZero(), nil
	})
	notReady := time.Since(stopped)
	if notReady > 40*time.Second+50*time.Second+15*time.Second {
		t.Errorf("%s took %s to go NotReady; want within the lease (40 s) plus the grace period (50 s)", node, notReady)
	}
	var evicted time.Time
	eventually(t, time.Minute, "the pod tolerating unreachable for 5 s evicted", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "brief", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			evicted = time.Now()
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if p.DeletionTimestamp != nil {
			evicted = time.Now()
			return true, nil
		}
		return false, nil
	})
	// The taint's time has whole seconds; the taint manager acts 5 s on.
	if after := evicted.Sub(taint); after < 4*time.Second || after > 20*time.Second {
		t.Errorf("the pod was evicted %s after the NoExecute taint; want about its tolerationSeconds, 5 s", after)
	}
	t.Logf("NotReady %s after stop; pod evicted %s after the taint", notReady.Round(time.Second), evicted.Sub(taint).Round(time.Second))

	mustBerth(t, home, "node", "start", node)
	eventually(t, time.Minute, node+" Ready and untainted again", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, tn := range n.Spec.Taints {
			if tn.Key == corev1.TaintNodeUnreachable || tn.Key == corev1.TaintNodeNotReady {
				return false, nil
			}
		}
		return kubelets.Ready(n) == corev1.ConditionTrue, nil
	})
}
