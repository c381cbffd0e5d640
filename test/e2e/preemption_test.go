package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Behaviour 5: with every GPU taken by training-low pods, a training pod
// (preemptionPolicy Never) waits and evicts nothing, and an
// inference-high pod preempts one training pod.
func TestInferencePreemptsTrainingWhichNeverPreempts(t *testing.T) {
	ctx := context.Background()
	ns := gpuLab
	clearPods(t, ns)
	var training []string
	for i := range 4 {
		name := fmt.Sprintf("preempt-%d", i)
		training = append(training, name)
		if _, err := client.CoreV1().Pods(ns).Create(ctx, anyGPUPod(ns, name, "training-low"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	running := func() map[string]bool {
		out := map[string]bool{}
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out[p.Name] = true
			}
		}
		return out
	}
	eventually(t, time.Minute, "four training pods running on the four GPUs", func() (bool, error) {
		return len(running()) == 4, nil
	})

	late, err := client.CoreV1().Pods(ns).Create(ctx, anyGPUPod(ns, "preempt-late", "training-low"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if late.Spec.PreemptionPolicy == nil || *late.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Fatalf("training-low pod has preemptionPolicy %v, want Never from its PriorityClass", late.Spec.PreemptionPolicy)
	}
	eventually(t, 30*time.Second, "the scheduler to find no room for the late training pod", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "preempt-late", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	// Give a wrongful preemption time to show before checking for one.
	time.Sleep(2 * time.Second)
	if r := running(); len(r) != 4 || r["preempt-late"] {
		t.Fatalf("a training pod with preemptionPolicy Never displaced another: running %v", r)
	}
	if p, _ := client.CoreV1().Pods(ns).Get(ctx, "preempt-late", metav1.GetOptions{}); p.Status.NominatedNodeName != "" {
		t.Errorf("the late training pod was nominated to %s, which only preemption does", p.Status.NominatedNodeName)
	}

	serve := anyGPUPod(ns, "serve", "inference-high")
	if _, err := client.CoreV1().Pods(ns).Create(ctx, serve, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the inference pod to preempt a training pod and run", func() (bool, error) {
		return running()["serve"], nil
	})
	r := running()
	left := 0
	for _, name := range training {
		if r[name] {
			left++
		}
	}
	if left != 3 {
		t.Errorf("%d of the 4 training pods still run after one inference pod arrived, want 3 (exactly one preempted)", left)
	}
	if r["preempt-late"] {
		t.Error("the late training pod took the freed GPU instead of the inference pod")
	}
}
