package apply

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
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
//   - the mutating policies: a pod of each class, made as the class's
//     policies would place it (classProbePods) in each namespace of each
//     team that may use it, comes back with the class's placement, and
//     so does a Deployment, StatefulSet, Job and CronJob around it, one
//     policy each (or, in a
//     blueprint with no such pod, a pod asking a GPU in requests only
//     comes back with the limit, or is refused by berth/gpu-limit, which
//     reads the mark only the mutation sets);
//   - under queueing: Kueue, a Job that names no queue, in each team
//     namespace, comes back with its team's (berth-kueue-queue);
//   - the validating policies, when they refuse (guardrails Enforce): a
//     namespace claiming a team it is not listed under is refused by
//     berth-namespaces. Under Warn and Audit a refusal is not visible to
//     the client, so only the mutating policies are probed.
//
// Every namespace is probed, not one: the policies name the team
// namespaces literally, so a team added to the blueprint changes them,
// and until the API server compiles the new version the old one refuses
// the new team's workloads (berth/gpu-namespace) and gives its Jobs no
// queue, while the first team's probe already passes. A probe pod that
// only a ResourceQuota refuses (its team's quota is in use) passed every
// policy; one placed pod of the kind is then enough.
//
// It returns an error saying what the probes last saw when timeout
// passes first.
func WaitForGuardrails(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint, timeout time.Duration) error {
	if bp.Spec.Guardrails == v1alpha1.GuardrailsOff {
		return nil
	}
	// The probes' requests do not carry the wait's deadline: near it,
	// client-go's rate limiter refuses a request it would have to delay
	// past it, and that refusal, the client's own, would hide the API
	// server's last answer. They still end when ctx does.
	unbounded, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	for _, p := range guardrailProbes(c, bp) {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			answer := p.check(unbounded)
			if unbounded.Err() != nil {
				return false, nil // cut short by ctx: not an answer
			}
			last = answer
			return answer == nil, nil
		})
		if err != nil {
			if last == nil {
				last = err
			}
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
	switch pods, gpu := classProbePods(bp), firstGPUResource(bp); {
	case len(pods) > 0:
		// Each kind has a policy of its own (compile's mutation targets),
		// and the API server compiles each when its informers hold it and
		// its binding: the pods' policy in force says nothing of the
		// Jobs'. Within a kind, any class will do: one policy serves
		// every class.
		for _, k := range workloadProbes(c) {
			out = append(out, probe{"MutatingAdmissionPolicy", k.policy, func(ctx context.Context) error {
				placed := 0
				var full error
				for _, pod := range pods {
					got, err := k.create(ctx, pod, dry)
					switch {
					// A team whose quota is in use refuses the probe
					// after every policy has admitted it: the quota's
					// answer, not a policy's.
					case err != nil && strings.Contains(err.Error(), "exceeded quota"):
						full = err
					case err != nil:
						return err
					// Not the tolerations or the priority class: the API
					// server's own admission plugins add those too.
					case got.Affinity == nil && len(got.TopologySpreadConstraints) == 0:
						return fmt.Errorf("a %s of class %s in %s came back without the class's placement", k.kind, pod.Labels[v1alpha1.LabelClass], pod.Namespace)
					default:
						placed++
					}
				}
				if placed == 0 {
					return full
				}
				return nil
			}})
		}
	case gpu != "":
		out = append(out, probe{"MutatingAdmissionPolicy", "berth-class-pods", func(ctx context.Context) error {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "berth-guardrail-probe-"}, Spec: probeSpec()}
			pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceName(gpu): apiresource.MustParse("1")}
			ns := metav1.NamespaceDefault
			if len(namespaces) > 0 {
				ns = namespaces[0]
			}
			got, err := c.CoreV1().Pods(ns).Create(ctx, pod, dry)
			if err != nil && strings.Contains(err.Error(), v1alpha1.RuleGPULimit) {
				return nil
			}
			if err != nil {
				return err
			}
			if _, ok := got.Spec.Containers[0].Resources.Limits[corev1.ResourceName(gpu)]; !ok {
				return fmt.Errorf("a pod asking %s in requests only came back without the limit", gpu)
			}
			return nil
		}})
	}
	if bp.Spec.UsesKueue() && len(namespaces) > 0 {
		out = append(out, probe{"MutatingAdmissionPolicy", compile.QueuePolicy, func(ctx context.Context) error {
			for _, t := range bp.Spec.Teams {
				for _, ns := range t.Namespaces {
					job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{GenerateName: "berth-guardrail-probe-"},
						Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: probeSpec()}}}
					got, err := c.BatchV1().Jobs(ns).Create(ctx, job, dry)
					if err != nil {
						return err
					}
					// The LocalQueue in each of a team's namespaces is
					// named after the team (compile's queue objects).
					if q := got.Labels[v1alpha1.LabelKueueQueueName]; q != t.Name {
						return fmt.Errorf("a Job in %s that names no queue came back in queue %q, not its team's %s", ns, q, t.Name)
					}
				}
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

// classProbePods are, for each class, pods its policies would place and
// every guardrail admits, one in each namespace of the teams that may
// use it: at the class's priority class (berth/class-priority refuses a
// pod of a class without it), and asking a GPU when the class's pools
// all have GPUs (a pod without one gets no placement), then only in
// namespaces with a GPU quota (berth/gpu-namespace).
func classProbePods(bp *v1alpha1.Blueprint) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range bp.Spec.Classes {
		c := &bp.Spec.Classes[i]
		gpu := classGPU(bp, c)
		for _, t := range bp.Spec.Teams {
			if len(t.Classes) > 0 && !slices.Contains(t.Classes, c.Name) {
				continue
			}
			if gpu != "" && (t.Quota == nil || t.Quota.GPU == nil || t.Quota.GPU.Sign() <= 0) {
				continue
			}
			for _, ns := range t.Namespaces {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{GenerateName: "berth-guardrail-probe-", Namespace: ns, Labels: map[string]string{v1alpha1.LabelClass: c.Name}},
					Spec:       probeSpec(),
				}
				pod.Spec.PriorityClassName = c.PriorityClassName()
				if gpu != "" {
					pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceName(gpu): apiresource.MustParse("1")}
				}
				out = append(out, pod)
			}
		}
	}
	return out
}

// classGPU is the GPU resource a pod of the class must ask for to be
// placed, when its pools all have GPUs; "" when one of them has none.
// System pools are no class's placement.
func classGPU(bp *v1alpha1.Blueprint, c *v1alpha1.Class) string {
	gpu := ""
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if !slices.Contains(c.Pools, p.Name) || p.Mode == v1alpha1.ModeSystem {
			continue
		}
		r := p.GPUResource()
		if r == "" {
			return ""
		}
		gpu = cmp.Or(gpu, r)
	}
	return gpu
}

// workloadProbe creates, as a dry run, an object of one kind the class
// policies mutate around a probe pod's spec, and returns the pod spec
// the API server gave back.
type workloadProbe struct {
	kind, policy string
	create       func(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.PodSpec, error)
}

// workloadProbes are the kinds compile's class policies mutate, each with
// its policy's name: pods, and the workloads whose pod templates they
// place (and whose Jobs get the spot disruption rule).
func workloadProbes(c kubernetes.Interface) []workloadProbe {
	template := func(pod *corev1.Pod, restart corev1.RestartPolicy) (metav1.ObjectMeta, corev1.PodTemplateSpec) {
		spec := *pod.Spec.DeepCopy()
		spec.RestartPolicy = restart
		return metav1.ObjectMeta{GenerateName: pod.GenerateName, Namespace: pod.Namespace, Labels: pod.Labels},
			corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: spec}
	}
	return []workloadProbe{
		{"pod", "berth-class-pods", func(ctx context.Context, pod *corev1.Pod, dry metav1.CreateOptions) (*corev1.PodSpec, error) {
			got, err := c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, dry)
			if err != nil {
				return nil, err
			}
			return &got.Spec, nil
		}},
		{"Deployment", "berth-class-deployments", func(ctx context.Context, pod *corev1.Pod, dry metav1.CreateOptions) (*corev1.PodSpec, error) {
			meta, tmpl := template(pod, corev1.RestartPolicyAlways)
			d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: pod.Labels}, Template: tmpl}}
			got, err := c.AppsV1().Deployments(pod.Namespace).Create(ctx, d, dry)
			if err != nil {
				return nil, err
			}
			return &got.Spec.Template.Spec, nil
		}},
		{"StatefulSet", "berth-class-statefulsets", func(ctx context.Context, pod *corev1.Pod, dry metav1.CreateOptions) (*corev1.PodSpec, error) {
			meta, tmpl := template(pod, corev1.RestartPolicyAlways)
			s := &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: pod.Labels}, Template: tmpl}}
			got, err := c.AppsV1().StatefulSets(pod.Namespace).Create(ctx, s, dry)
			if err != nil {
				return nil, err
			}
			return &got.Spec.Template.Spec, nil
		}},
		{"Job", "berth-class-jobs", func(ctx context.Context, pod *corev1.Pod, dry metav1.CreateOptions) (*corev1.PodSpec, error) {
			meta, tmpl := template(pod, corev1.RestartPolicyNever)
			got, err := c.BatchV1().Jobs(pod.Namespace).Create(ctx, &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: tmpl}}, dry)
			if err != nil {
				return nil, err
			}
			return &got.Spec.Template.Spec, nil
		}},
		{"CronJob", "berth-class-cronjobs", func(ctx context.Context, pod *corev1.Pod, dry metav1.CreateOptions) (*corev1.PodSpec, error) {
			meta, tmpl := template(pod, corev1.RestartPolicyNever)
			cj := &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}
			got, err := c.BatchV1().CronJobs(pod.Namespace).Create(ctx, cj, dry)
			if err != nil {
				return nil, err
			}
			return &got.Spec.JobTemplate.Spec.Template.Spec, nil
		}},
	}
}

func probeSpec() corev1.PodSpec {
	return corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "probe", Image: "probe"}}}
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
