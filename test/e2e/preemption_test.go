package e2e

import (
	"context"
	"fmt"
	"strings"
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

	created, err := client.CoreV1().Pods(ns).Create(ctx, anyGPUPod(ns, "preempt-late", "training-low"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.PreemptionPolicy == nil || *created.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Fatalf("training-low pod has preemptionPolicy %v, want Never from its PriorityClass", created.Spec.PreemptionPolicy)
	}
	// The scheduler writes its verdict on the late pod in one status
	// update: the Unschedulable condition, whose message ends with what
	// preemption said, and a nominatedNodeName had it preempted. So the
	// condition that quotes preemption refusing is the proof that nothing
	// was preempted for it; no waiting for a preemption that might come.
	var late *corev1.Pod
	eventually(t, 30*time.Second, "the scheduler to refuse preemption for the late training pod", func() (bool, error) {
		late, err = client.CoreV1().Pods(ns).Get(ctx, "preempt-late", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := scheduledCondition(late)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			strings.Contains(c.Message, "preemption: not eligible due to preemptionPolicy=Never"), nil
	})
	if late.Status.NominatedNodeName != "" {
		t.Errorf("the late training pod was nominated to %s, which only preemption does", late.Status.NominatedNodeName)
	}
	l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Items {
		if p.Name == "preempt-late" {
			continue
		}
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || hasDisruptionTarget(&p) {
			t.Errorf("training pod %s was disturbed (phase %s, deleting %v, conditions %v) by a pod that never preempts", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, p.Status.Conditions)
		}
	}
	if len(l.Items) != 5 {
		t.Errorf("%d pods in %s, want the 4 training pods and the late one", len(l.Items), ns)
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

// scheduledCondition is the pod's PodScheduled condition, or nil.
func scheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// hasDisruptionTarget reports whether something (the scheduler's
// preemption, an eviction) has marked the pod for removal.
func hasDisruptionTarget(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
