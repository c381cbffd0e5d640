package e2e

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// randomPod builds a pod from the pieces the guardrails look at: GPU and
// other resources in any container, tolerations of every shape (keyless,
// Exists, wrong values), node selectors and affinity for any pool, node
// names, priority classes and class labels, in any namespace.
func randomPod(r *rand.Rand, i int, later string) *corev1.Pod {
	pick := func(options ...string) string { return options[r.IntN(len(options))] }
	ns := pick("team-a", "team-b", "web", "gpu-lab", systemNS, "default", later)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("fuzz-%d", i)}}
	containers := 1 + r.IntN(4)
	for c := range containers {
		ctr := corev1.Container{Name: fmt.Sprintf("c%d", c), Image: "x"}
		if r.IntN(3) == 0 {
			n := resource.MustParse(pick("1", "2", "0"))
			switch r.IntN(3) {
			case 0:
				ctr.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": n}
			case 1:
				ctr.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": n}
			default:
				ctr.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": n}
				ctr.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": n}
			}
		}
		if r.IntN(4) == 0 {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, ctr)
		} else {
			pod.Spec.Containers = append(pod.Spec.Containers, ctr)
		}
	}
	if len(pod.Spec.Containers) == 0 {
		pod.Spec.Containers = []corev1.Container{{Name: "main", Image: "x"}}
	}
	for range r.IntN(4) {
		t := corev1.Toleration{
			Key:      pick("", "gpu", "CriticalAddonsOnly", "berth.io/capacity", "other"),
			Operator: corev1.TolerationOperator(pick("", "Exists", "Equal")),
			Effect:   corev1.TaintEffect(pick("", "NoSchedule", "NoExecute")),
		}
		if t.Operator != corev1.TolerationOpExists {
			t.Value = pick("", "true", "spot", "false")
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			t.Operator = corev1.TolerationOpExists
			t.Value = ""
		}
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
	}
	if r.IntN(3) == 0 {
		pod.Spec.NodeSelector = map[string]string{pick("berth.io/pool", "agentpool", "nvidia.com/gpu.product", "other"): pick("gpu", "spot-gpu", "system", "cpu", "NVIDIA-L4")}
	}
	if r.IntN(4) == 0 {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: pick("berth.io/pool", "agentpool", "nvidia.com/gpu.product"), Operator: corev1.NodeSelectorOpIn, Values: []string{pick("gpu", "system", "cpu")},
			}}}},
		}}}
	}
	if r.IntN(6) == 0 {
		pod.Spec.NodeName = pick("gpu-0", "cpu-0", "system-0")
	}
	if r.IntN(3) == 0 {
		pod.Spec.PriorityClassName = pick("inference-high", "training-low", "llm-high", "system-cluster-critical", "system-node-critical", "fuzz-high", "fuzz-low")
	}
	if r.IntN(3) == 0 {
		pod.Labels = map[string]string{"berth.io/class": pick("inference", "training", "batch", "llm", "unknown")}
	}
	return pod
}

// ceiling is the highest priority a pod may run at in ns: a team's
// highest class, the default priority (0) outside the blueprint, anything
// in a system namespace.
func ceiling(ns string) int32 {
	switch ns {
	case "team-a", "team-b", "gpu-lab":
		return 100000
	case systemNS, "kube-system":
		return math.MaxInt32
	}
	return 0
}

// Random pods against the compiled policies: the API server answers every
// one with an admission or a refusal that names its reason; no policy
// errors out, runs over its CEL cost budget, or crashes the request. And
// no admitted pod breaks a rule: none runs above its namespace's
// ceiling (classes made after apply and a namespace made after apply
// included), none outside a system namespace names a node or tolerates
// the System pool, no GPU toleration gets in from a namespace without
// GPUs, and a pod's class label and priority class agree.
func TestGuardrailsHoldOnRandomPods(t *testing.T) {
	ctx := context.Background()
	later := namespace(t)
	for name, value := range map[string]int32{"fuzz-high": 500000, "fuzz-low": -10} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	eventually(t, 30*time.Second, "the fuzz classes in the Priority plugin's cache", func() (bool, error) {
		p := stationPod(systemNS, "probe")
		p.Spec.PriorityClassName = "fuzz-high"
		_, err := client.CoreV1().Pods(systemNS).Create(ctx, p, dryRun)
		return err == nil, nil
	})
	classPC := map[string]string{"inference": "inference-high", "training": "training-low", "llm": "llm-high", "finetune": "finetune-low"}
	r := rand.New(rand.NewPCG(1, 2))
	admitted, refused, aboveDefault := 0, 0, 0
	for i := range 400 {
		pod := randomPod(r, i, later)
		got, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, dryRun)
		if err == nil {
			admitted++
			ns := pod.Namespace
			if prio := ptrValue(got.Spec.Priority); prio > ceiling(ns) {
				t.Errorf("pod %d admitted in %s at priority %d (class %s), above the namespace's ceiling %d", i, ns, prio, got.Spec.PriorityClassName, ceiling(ns))
			} else if prio > 0 {
				aboveDefault++
			}
			if ns == systemNS {
				continue
			}
			if got.Spec.NodeName != "" {
				t.Errorf("pod %d admitted in %s with nodeName %s", i, ns, got.Spec.NodeName)
			}
			for _, tol := range got.Spec.Tolerations {
				if (tol.Key == "CriticalAddonsOnly" && (tol.Operator == corev1.TolerationOpExists || tol.Value == "true") && (tol.Effect == "" || tol.Effect == corev1.TaintEffectNoSchedule)) || (tol.Key == "" && tol.Operator == corev1.TolerationOpExists) {
					t.Errorf("pod %d admitted in %s tolerating the System pool: %+v", i, ns, tol)
				}
				if (ns == "web" || ns == "default" || ns == later) && tol.Key == "gpu" && (tol.Operator == corev1.TolerationOpExists || tol.Value == "true") && (tol.Effect == "" || tol.Effect == corev1.TaintEffectNoSchedule) {
					t.Errorf("pod %d admitted in %s with the GPU toleration %+v: %+v", i, ns, tol, got.Spec)
				}
			}
			if c := got.Labels["berth.io/class"]; classPC[c] != "" && classPC[c] != got.Spec.PriorityClassName {
				t.Errorf("pod %d admitted as class %s at priorityClassName %q", i, c, got.Spec.PriorityClassName)
			}
			continue
		}
		refused++
		msg := err.Error()
		for _, bad := range []string{"resulted in error", "cost budget", "runtime cost", "Internal error", "INTERNAL_ERROR", "no such key", "no matching overload", "failed to evaluate"} {
			if strings.Contains(msg, bad) {
				t.Errorf("pod %d: the policies failed rather than decided (%q): %v\n%+v", i, bad, err, pod)
			}
		}
	}
	t.Logf("%d admitted (%d above the default priority), %d refused", admitted, aboveDefault, refused)
	if admitted == 0 || refused == 0 || aboveDefault == 0 {
		t.Errorf("%d admitted (%d above the default priority) and %d refused: the generator does not exercise every side", admitted, aboveDefault, refused)
	}
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
