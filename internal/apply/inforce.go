package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
)

// WaitForGuardrails waits until the API server enforces the blueprint's
// admission policies. A policy written to the API takes effect only when
// the API server's policy source next compiles what its informers hold,
// once a second: until then a class's pod is admitted without its
// tolerations and affinity and waits, unschedulable, for ever. Each
// probe is a server-side dry run that a policy in force answers in a way
// none other would:
//
//   - the mutating policies: a pod of a class, in a team's namespace,
//     comes back with the class's placement (or, in a blueprint without
//     classes, a pod asking a GPU in requests only comes back with the
//     limit);
//   - the validating policies, when they refuse (guardrails Enforce): a
//     namespace claiming a team it is not listed under is refused by
//     berth-namespaces. Under Warn and Audit a refusal is not visible to
//     the client, so only the mutating policies are probed.
//
// It returns an error saying what the probes last saw when timeout
// passes first.
func WaitForGuardrails(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint, timeout time.Duration) error {
	if bp.Spec.Guardrails == v1alpha1.GuardrailsOff {
		return nil
	}
	probes := guardrailProbes(c, bp)
	for _, p := range probes {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			last = p.check(ctx)
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("the API server does not enforce %s %s after %s (its last answer: %v)", p.kind, p.policy, timeout, last)
		}
	}
	return nil
}

// probe asks the API server whether one policy is in force: check
// returns nil when it is, else what it saw.
type probe struct {
	kind, policy string
	check        func(context.Context) error
}

func guardrailProbes(c kubernetes.Interface, bp *v1alpha1.Blueprint) []probe {
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var out []probe
	var namespaces []string
	for _, t := range bp.Spec.Teams {
		namespaces = append(namespaces, t.Namespaces...)
	}
	plain := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "probe", Image: "probe"}}}
	switch gpu := firstGPUResource(bp); {
	case len(bp.Spec.Classes) > 0 && len(namespaces) > 0:
		// Any namespace and class will do whose pod quota and the
		// validating policies admit: a team may not use every class.
		out = append(out, probe{"MutatingAdmissionPolicy", "berth-class-pods", func(ctx context.Context) error {
			var errs []string
			for _, ns := range namespaces {
				for _, cl := range bp.Spec.Classes {
					pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "berth-guardrail-probe-", Labels: map[string]string{v1alpha1.LabelClass: cl.Name}}, Spec: plain}
					got, err := c.CoreV1().Pods(ns).Create(ctx, pod, dry)
					switch {
					case err != nil:
						errs = append(errs, err.Error())
					// Not the tolerations or the priority class: the API
					// server's own admission plugins add those too.
					case got.Spec.Affinity != nil || len(got.Spec.TopologySpreadConstraints) > 0:
						return nil
					default:
						errs = append(errs, fmt.Sprintf("a pod of class %s in %s came back without the class's placement", cl.Name, ns))
					}
				}
			}
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}})
	case gpu != "":
		out = append(out, probe{"MutatingAdmissionPolicy", "berth-class-pods", func(ctx context.Context) error {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "berth-guardrail-probe-"}, Spec: *plain.DeepCopy()}
			pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceName(gpu): apiresource.MustParse("1")}
			ns := metav1.NamespaceDefault
			if len(namespaces) > 0 {
				ns = namespaces[0]
			}
			got, err := c.CoreV1().Pods(ns).Create(ctx, pod, dry)
			if err != nil {
				return err
			}
			if _, ok := got.Spec.Containers[0].Resources.Limits[corev1.ResourceName(gpu)]; !ok {
				return fmt.Errorf("a pod asking %s in requests only came back without the limit", gpu)
			}
			return nil
		}})
	}
	if bp.Spec.Guardrails == v1alpha1.GuardrailsEnforce && len(bp.Spec.Teams) > 0 {
		out = append(out, probe{"ValidatingAdmissionPolicy", compile.NamespacePolicy, func(ctx context.Context) error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "berth-guardrail-probe-", Labels: map[string]string{v1alpha1.LabelTeam: bp.Spec.Teams[0].Name}}}
			_, err := c.CoreV1().Namespaces().Create(ctx, ns, dry)
			if err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+compile.NamespacePolicy+"'") {
				return nil
			}
			if err == nil {
				return fmt.Errorf("a namespace claiming team %s was admitted", bp.Spec.Teams[0].Name)
			}
			return err
		}})
	}
	return out
}

func firstGPUResource(bp *v1alpha1.Blueprint) string {
	for i := range bp.Spec.Pools {
		if r := bp.Spec.Pools[i].GPUResource(); r != "" {
			return r
		}
	}
	return ""
}

// ChangesGuardrails reports whether the plan writes an admission policy
// or binding: the API server enforces it a moment after the write, not
// at once (WaitForGuardrails).
func (p *Plan) ChangesGuardrails() bool {
	for _, o := range p.Objects {
		if stageOf(o.Kind) == 2 {
			return true
		}
	}
	return false
}
