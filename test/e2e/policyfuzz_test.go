package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// randomPod builds a pod from the pieces the guardrails look at: GPU and
// other resources in any container, tolerations of every shape (keyless,
// Exists, wrong values), node selectors and affinity for any pool, node
// names, priority classes and class labels, in any namespace.
func randomPod(r *rand.Rand, i int) *corev1.Pod {
	pick := func(options ...string) string { return options[r.IntN(len(options))] }
	ns := pick("team-a", "team-b", "web", "gpu-lab", systemNS, "default")
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
		pod.Spec.PriorityClassName = pick("inference-high", "training-low", "system-cluster-critical")
	}
	if r.IntN(3) == 0 {
		pod.Labels = map[string]string{"berth.io/class": pick("inference", "training", "batch", "unknown")}
	}
	return pod
}

// Random pods against the compiled policies: the API server answers every
// one with an admission or a refusal that names its reason; no policy
// errors out, runs over its CEL cost budget, or crashes the request. And
// a pod that tolerates the GPU taint from a namespace without GPUs is
// never admitted, whatever else it carries.
func TestGuardrailsHoldOnRandomPods(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	admitted, refused := 0, 0
	for i := range 400 {
		pod := randomPod(r, i)
		_, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			admitted++
			if pod.Namespace == "web" || pod.Namespace == "default" {
				for _, tol := range pod.Spec.Tolerations {
					if tol.Key == "gpu" && (tol.Operator == corev1.TolerationOpExists || tol.Value == "true") && (tol.Effect == "" || tol.Effect == corev1.TaintEffectNoSchedule) {
						t.Errorf("pod %d admitted in %s with the GPU toleration %+v: %+v", i, pod.Namespace, tol, pod.Spec)
					}
				}
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
	t.Logf("%d admitted, %d refused", admitted, refused)
	if admitted == 0 || refused == 0 {
		t.Errorf("%d admitted and %d refused: the generator does not exercise both sides", admitted, refused)
	}
}
