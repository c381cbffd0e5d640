package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/objtest"
	"k8s.io/utils/ptr"
)

// waitForGuardrails waits until the API server enforces each applied
// policy: they take effect when its policy informers catch up. A probe
// reports whether its policy is in force, and what it last saw.
func waitForGuardrails(ctx context.Context) error {
	dry := []string{metav1.DryRunAll}
	refusedBy := func(policy string, err error) (bool, error) {
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'"), err
	}
	mutated := func(s *corev1.PodSpec, err error) (bool, error) {
		if err != nil {
			return false, err
		}
		return s.Affinity != nil, fmt.Errorf("no class affinity yet")
	}
	pinned := corev1.PodSpec{NodeName: "cpu-0", Containers: []corev1.Container{{Name: "c", Image: "x"}}}
	batch := map[string]string{v1alpha1.LabelClass: "batch"}
	plain := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}
	probes := map[string]func() (bool, error){
		compile.PodPolicy: func() (bool, error) {
			_, err := client.CoreV1().Pods("web").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: pinned}, metav1.CreateOptions{DryRun: dry})
			return refusedBy(compile.PodPolicy, err)
		},
		compile.WorkloadPolicy: func() (bool, error) {
			d := objtest.MakeDeployment("web", "probe", 1).Obj()
			d.Spec.Template.Spec = pinned
			_, err := client.AppsV1().Deployments("web").Create(ctx, d, metav1.CreateOptions{DryRun: dry})
			return refusedBy(compile.WorkloadPolicy, err)
		},
		compile.NamespacePolicy: func() (bool, error) {
			ns, err := client.CoreV1().Namespaces().Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ns.Labels[v1alpha1.LabelTeam] = "someone-else"
			_, err = client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{DryRun: dry})
			return refusedBy(compile.NamespacePolicy, err)
		},
		"berth-class-pods": func() (bool, error) {
			p, err := client.CoreV1().Pods("web").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: batch}, Spec: plain}, metav1.CreateOptions{DryRun: dry})
			if err != nil {
				return false, err
			}
			return mutated(&p.Spec, nil)
		},
		"berth-class-deployments": func() (bool, error) {
			d := objtest.MakeDeployment("web", "probe", 1).Obj()
			d.Labels = batch
			got, err := client.AppsV1().Deployments("web").Create(ctx, d, metav1.CreateOptions{DryRun: dry})
			if err != nil {
				return false, err
			}
			return mutated(&got.Spec.Template.Spec, nil)
		},
		"berth-class-jobs": func() (bool, error) {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: batch}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: plain}}}
			got, err := client.BatchV1().Jobs("web").Create(ctx, j, metav1.CreateOptions{DryRun: dry})
			if err != nil {
				return false, err
			}
			return mutated(&got.Spec.Template.Spec, nil)
		},
	}
	for name, probe := range probes {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var ok bool
			ok, last = probe()
			return ok, nil
		})
		if err != nil {
			return fmt.Errorf("policy %s is not in force a minute after apply (last answer: %v)", name, last)
		}
	}
	return nil
}

// bypass is an attempt to get round the design, and the rule that must
// refuse it.
type bypass struct {
	name string
	ns   string
	pod  func(*corev1.Pod)
	rule string
}

func gpuLimits(n string) corev1.ResourceList {
	return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
}

var gpuToleration = corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}

// Every bypass attempt the design names is refused by the API server, and
// the refusal names the rule and the fix.
func TestGuardrailsRefuseBypasses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []bypass{
		{"GPU toleration from a team without GPUs", "web", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{gpuToleration}
			p.Spec.Containers[0].Resources.Limits = gpuLimits("1")
		}, v1alpha1.RuleGPUNamespace},
		{"GPU pool selected from a team without GPUs", "web", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"agentpool": "gpu"}
			p.Spec.Containers[0].Resources.Limits = gpuLimits("1")
		}, v1alpha1.RuleGPUNamespace},
		{"GPU toleration without a GPU", "team-a", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{gpuToleration}
		}, v1alpha1.RuleGPUWithoutGPU},
		{"a toleration of every taint", "team-a", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, v1alpha1.RuleSystemPool},
		{"the system pool from a team", "team-a", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}}
			p.Spec.NodeSelector = map[string]string{"berth.io/pool": "system"}
		}, v1alpha1.RuleSystemPool},
		{"nodeName set to a GPU node", "team-a", func(p *corev1.Pod) {
			p.Spec.NodeName = "gpu-0"
			p.Spec.Containers[0].Resources.Limits = gpuLimits("1")
		}, v1alpha1.RuleNodeName},
		{"inference-high from a team not allowed it", "web", func(p *corev1.Pod) {
			p.Spec.PriorityClassName = "inference-high"
		}, v1alpha1.RulePriorityClass},
		{"system-cluster-critical from a team", "team-a", func(p *corev1.Pod) {
			p.Spec.PriorityClassName = "system-cluster-critical"
		}, v1alpha1.RulePriorityClass},
		{"a training pod that could preempt", "gpu-lab", func(p *corev1.Pod) {
			p.Labels = map[string]string{v1alpha1.LabelClass: "training"}
		}, v1alpha1.RuleClassPreemption},
		// Kubernetes' own validation would refuse these with no fix; the
		// gpu-limits policies complete the limit and mark them, so that
		// berth's rule refuses them with its fix.
		{"GPUs in requests without a limit", "team-a", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = gpuLimits("1")
		}, v1alpha1.RuleGPULimit},
		{"GPUs asked for by an init container without a limit", "team-a", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "fetch", Image: "x", Resources: corev1.ResourceRequirements{Requests: gpuLimits("1")}}}
		}, v1alpha1.RuleGPULimit},
		{"spec.priority set by hand", "team-a", func(p *corev1.Pod) {
			p.Spec.Priority = ptr.To(int32(1000000))
		}, "must not be provided in pod spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "bypass"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			}
			tc.pod(pod)
			_, err := client.CoreV1().Pods(tc.ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				t.Fatalf("admitted")
			}
			if !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("refused, but not by %s: %v", tc.rule, err)
			}
			if strings.HasPrefix(tc.rule, "berth/") && !strings.Contains(err.Error(), "Fix:") {
				t.Errorf("refusal does not say how to fix it: %v", err)
			}
		})
	}
}

// A workload that is fine when created cannot escape with an update, and
// a template may not carry a priority number.
func TestGuardrailsCoverWorkloadUpdates(t *testing.T) {
	ctx := context.Background()
	name := "escape-" + fmt.Sprint(time.Now().UnixNano()%100000)
	d := createDeployment(t, objtest.MakeDeployment("web", name, 1).Obj())
	t.Cleanup(func() { client.AppsV1().Deployments("web").Delete(context.Background(), name, metav1.DeleteOptions{}) })

	// The Deployment controller writes its status meanwhile: a conflict is
	// retried, a refusal is the answer.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments("web").Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Tolerations = []corev1.Toleration{gpuToleration}
		d.Spec.Template.Spec.Containers[0].Resources.Limits = gpuLimits("1")
		_, err = client.AppsV1().Deployments("web").Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), v1alpha1.RuleGPUNamespace) {
		t.Errorf("updating a Deployment's template onto the GPU pool: %v, want %s", err, v1alpha1.RuleGPUNamespace)
	}

	p := objtest.MakeDeployment("team-a", name, 1).Obj()
	p.Spec.Template.Spec.Priority = ptr.To(int32(5))
	_, err = client.AppsV1().Deployments("team-a").Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), v1alpha1.RulePriorityValue) {
		t.Errorf("a Deployment template with spec.priority: %v, want %s", err, v1alpha1.RulePriorityValue)
	}
}

// A namespace cannot move itself to another team, nor can another
// namespace claim a team's labels.
func TestGuardrailsKeepNamespaceLabels(t *testing.T) {
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels[v1alpha1.LabelTeam] = "gpu-lab"
	if _, err := client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), v1alpha1.RuleNamespaceLabels) {
		t.Errorf("relabelling team web's namespace as gpu-lab's: %v, want %s", err, v1alpha1.RuleNamespaceLabels)
	}
	other, err := client.CoreV1().Namespaces().Get(ctx, namespace(t), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Labels = map[string]string{v1alpha1.LabelTeam: "gpu-lab"}
	if _, err := client.CoreV1().Namespaces().Update(ctx, other, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), v1alpha1.RuleNamespaceLabels) {
		t.Errorf("a namespace claiming team gpu-lab's label: %v, want %s", err, v1alpha1.RuleNamespaceLabels)
	}
}

// The API server type-checks every policy against the kinds it matches;
// berth's policies must check clean, or a typo could hide in a rule that
// never fires.
func TestGuardrailsTypeCheck(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{compile.PodPolicy, compile.WorkloadPolicy, compile.CronJobPolicy, compile.NamespacePolicy, compile.PriorityPolicy} {
		eventually(t, 2*time.Minute, "type checking of "+name, func() (bool, error) {
			p, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.ObservedGeneration != p.Generation || p.Status.TypeChecking == nil {
				return false, nil
			}
			for _, w := range p.Status.TypeChecking.ExpressionWarnings {
				t.Errorf("%s: %s: %s", name, w.FieldRef, w.Warning)
			}
			return true, nil
		})
	}
}
