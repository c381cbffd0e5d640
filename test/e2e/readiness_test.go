package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probedPod is a plain pod whose one container has the given readiness
// probe (none when nil).
func probedPod(ns, name string, probe *corev1.Probe) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx", ReadinessProbe: probe}},
		},
	}
}

func httpGetProbe(initialDelay, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
	}
}

// falseProbe is berth's convention for a probe that never succeeds.
func falseProbe() *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/false"}}}}
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// readyAfter creates the pod and waits until it is Ready, checking on the
// way that it was Running and unready first (when it has a probe). It
// returns how long after its start the pod became Ready, by the pod's own
// timestamps (whole seconds).
func readyAfter(t *testing.T, pod *corev1.Pod) time.Duration {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	var got *corev1.Pod
	sawUnready := false
	eventually(t, time.Minute, "pod "+pod.Name+" Ready", func() (bool, error) {
		var err error
		got, err = client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready := podCondition(got, corev1.PodReady)
		if got.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == corev1.ConditionFalse {
			sawUnready = true
		}
		return ready != nil && ready.Status == corev1.ConditionTrue, nil
	})
	probed := pod.Spec.Containers[0].ReadinessProbe != nil
	if probed && !sawUnready {
		t.Errorf("pod %s with a readiness probe was never seen Running and unready", pod.Name)
	}
	if got.Status.StartTime == nil {
		t.Fatalf("pod %s is Ready without a start time", pod.Name)
	}
	for _, cs := range got.Status.ContainerStatuses {
		if !cs.Ready || cs.State.Running == nil {
			t.Errorf("pod %s is Ready but container %s is not running and ready: %+v", pod.Name, cs.Name, cs)
		}
	}
	return podCondition(got, corev1.PodReady).LastTransitionTime.Sub(got.Status.StartTime.Time)
}

// Simulated readiness follows the pod's readiness probe: initialDelaySeconds
// and periodSeconds as a kubelet runs them (see
// internal/cluster/stages/pod-probe-ready.yaml), and never for a probe that
// cannot succeed, nor while an image cannot be pulled. Pods without a probe
// are Ready at once, as before.
func TestReadiness(t *testing.T) {
	ns := namespace(t)

	t.Run("no probe: Ready at start", func(t *testing.T) {
		t.Parallel()
		if d := readyAfter(t, probedPod(ns, "no-probe", nil)); d != 0 {
			t.Errorf("a pod without a probe became Ready %v after it started, want at once", d)
		}
	})
	t.Run("initialDelaySeconds", func(t *testing.T) {
		t.Parallel()
		// The first probe after the delay is at 4 s (a tick of every 2 s).
		d := readyAfter(t, probedPod(ns, "initial-delay", httpGetProbe(4, 2)))
		if d < 4*time.Second || d > 6*time.Second {
			t.Errorf("Ready %v after start, want 4 s (up to 2 s late)", d)
		}
	})
	t.Run("periodSeconds", func(t *testing.T) {
		t.Parallel()
		// Probes at 0 s and 5 s; the one at 0 s is within the 3 s delay.
		d := readyAfter(t, probedPod(ns, "period", httpGetProbe(3, 5)))
		if d < 5*time.Second || d > 7*time.Second {
			t.Errorf("Ready %v after start, want 5 s, the first probe tick after the 3 s delay (up to 2 s late)", d)
		}
	})
	t.Run("a probe that never succeeds", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		never := probedPod(ns, "never", falseProbe())
		if _, err := client.CoreV1().Pods(ns).Create(ctx, never, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A pod started after it, whose probe succeeds 3 s in, becomes
		// Ready; by then the failing one has had several periods to.
		readyAfter(t, probedPod(ns, "control", httpGetProbe(3, 1)))
		got, err := client.CoreV1().Pods(ns).Get(ctx, never.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := podCondition(got, corev1.PodReady)
		if got.Status.Phase != corev1.PodRunning || ready == nil || ready.Status != corev1.ConditionFalse {
			t.Fatalf("pod with an exec /bin/false probe: phase %s, Ready %+v; want Running and not Ready", got.Status.Phase, ready)
		}
		if ready.Reason != "ContainersNotReady" || ready.Message != "containers with unready status: [app]" {
			t.Errorf("Ready condition %q %q, want the kubelet's ContainersNotReady and its message", ready.Reason, ready.Message)
		}
	})
	t.Run("an image that cannot be pulled", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		stalled := probedPod(ns, "stalled", nil)
		stalled.Spec.Containers[0].Image = "webserver:404"
		if _, err := client.CoreV1().Pods(ns).Create(ctx, stalled, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "pod stalled in ImagePullBackOff", func() (bool, error) {
			got, err := client.CoreV1().Pods(ns).Get(ctx, stalled.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cs := got.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ImagePullBackOff", nil
		})
		// Fixing the image starts the pod, as a kubelet would.
		got, err := client.CoreV1().Pods(ns).Get(ctx, stalled.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != corev1.PodPending {
			t.Errorf("pod with image webserver:404 is %s, want Pending", got.Status.Phase)
		}
		got.Spec.Containers[0].Image = "webserver:1.0"
		if _, err := client.CoreV1().Pods(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "pod stalled Ready once its image is fixed", func() (bool, error) {
			got, err := client.CoreV1().Pods(ns).Get(ctx, stalled.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ready := podCondition(got, corev1.PodReady)
			return got.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == corev1.ConditionTrue, nil
		})
	})
}

// What the upstream DisruptionController UnhealthyPodEvictionPolicy specs
// check, on pods kept unready by their probe: the budget counts none of them
// healthy, IfHealthyBudget refuses to evict them, AlwaysAllow evicts them.
func TestReadinessUnhealthyPodEviction(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		policy    policyv1.UnhealthyPodEvictionPolicyType
		wantEvict bool
	}{
		{policyv1.IfHealthyBudget, false},
		{policyv1.AlwaysAllow, true},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			one := intstr.FromInt32(1)
			pdb := &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"},
				Spec: policyv1.PodDisruptionBudgetSpec{
					Selector:                   &metav1.LabelSelector{MatchLabels: map[string]string{"budget": "yes"}},
					MinAvailable:               &one,
					UnhealthyPodEvictionPolicy: &tc.policy,
				},
			}
			if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"unready-1", "unready-2"} {
				p := probedPod(ns, name, falseProbe())
				p.Labels["budget"] = "yes"
				if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			runningPods(t, ns, "budget=yes", 2)
			eventually(t, time.Minute, "the budget to count 2 pods, none healthy", func() (bool, error) {
				got, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, pdb.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				s := got.Status
				return s.ObservedGeneration == got.Generation && s.ExpectedPods == 2 && s.CurrentHealthy == 0 && s.DesiredHealthy == 1, nil
			})
			err := client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unready-1"}})
			switch {
			case tc.wantEvict && err != nil:
				t.Errorf("evicting an unready pod under %s: %v, want it evicted", tc.policy, err)
			case !tc.wantEvict && !apierrors.IsTooManyRequests(err):
				t.Errorf("evicting an unready pod under %s: %v, want 429 Too Many Requests", tc.policy, err)
			}
		})
	}
}
