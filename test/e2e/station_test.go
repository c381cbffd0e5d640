package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
)

var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

func stationPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
}

// refusedBy fails t unless err is a refusal by rule that carries a fix and
// every one of the words.
func refusedBy(t *testing.T, what string, err error, rule string, words ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: admitted, want refused by %s", what, rule)
		return
	}
	for _, w := range append([]string{rule, "Fix:"}, words...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: refused without %q: %v", what, w, err)
		}
	}
}

// No namespace runs above its station: a namespace outside the blueprint
// (one created after apply, and default) runs at most at the default
// priority, through pods and every kind of template; a class made after
// apply raises no one's ceiling; nor does a new default class.
func TestNoNamespaceRunsAboveItsStation(t *testing.T) {
	ctx := context.Background()
	later := namespace(t)
	for _, ns := range []string{later, "default"} {
		for _, pc := range []string{"inference-high", "system-cluster-critical", "system-node-critical"} {
			p := stationPod(ns, "escalate")
			p.Spec.PriorityClassName = pc
			_, err := client.CoreV1().Pods(ns).Create(ctx, p, dryRun)
			refusedBy(t, "a "+pc+" pod in "+ns, err, v1alpha1.RulePriorityCeiling, "namespace "+ns, "at most at priority 0", pc)
		}
		d := objtest.MakeDeployment(ns, "escalate", 1).Obj()
		d.Spec.Template.Spec.PriorityClassName = "inference-high"
		_, err := client.AppsV1().Deployments(ns).Create(ctx, d, dryRun)
		refusedBy(t, "an inference-high Deployment in "+ns, err, v1alpha1.RulePriorityClass, "namespace "+ns, "inference-high", "default priority 0")
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "escalate"},
			Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, PriorityClassName: "system-cluster-critical", Containers: []corev1.Container{{Name: "c", Image: "x"}}},
			}}}},
		}
		_, err = client.BatchV1().CronJobs(ns).Create(ctx, cj, dryRun)
		refusedBy(t, "a system-cluster-critical CronJob in "+ns, err, v1alpha1.RulePriorityClass, "system-cluster-critical")
		if _, err := client.CoreV1().Pods(ns).Create(ctx, stationPod(ns, "plain"), dryRun); err != nil {
			t.Errorf("a pod with no class in %s: %v", ns, err)
		}
	}

	// Nor through an update of a workload that was fine when created.
	if _, err := client.AppsV1().Deployments(later).Create(ctx, objtest.MakeDeployment(later, "climbs", 1).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a Deployment with no class in %s: %v", later, err)
	}
	// The Deployment controller writes its status meanwhile: a conflict
	// is retried, a refusal is the answer.
	var d *appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if d, err = client.AppsV1().Deployments(later).Get(ctx, "climbs", metav1.GetOptions{}); err != nil {
			return err
		}
		d.Spec.Template.Spec.PriorityClassName = "inference-high"
		_, err = client.AppsV1().Deployments(later).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	refusedBy(t, "a Deployment in "+later+" updated to inference-high", err, v1alpha1.RulePriorityClass, "inference-high")

	// A class made after apply, above every class of the blueprint.
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("made-later-%d", time.Now().UnixNano()%100000)}, Value: 5000000}
	if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, high, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a PriorityClass after apply: %v", err)
	}
	t.Cleanup(func() {
		client.SchedulingV1().PriorityClasses().Delete(context.Background(), high.Name, metav1.DeleteOptions{})
	})
	eventually(t, 30*time.Second, "the new class in the Priority plugin's cache", func() (bool, error) {
		p := stationPod(later, "later")
		p.Spec.PriorityClassName = high.Name
		_, err := client.CoreV1().Pods(later).Create(ctx, p, dryRun)
		return err == nil || !strings.Contains(err.Error(), "no PriorityClass"), nil
	})
	for ns, rule := range map[string]string{"team-a": v1alpha1.RulePriorityClass, later: v1alpha1.RulePriorityCeiling, "default": v1alpha1.RulePriorityCeiling} {
		p := stationPod(ns, "later")
		p.Spec.PriorityClassName = high.Name
		_, err := client.CoreV1().Pods(ns).Create(ctx, p, dryRun)
		refusedBy(t, "a pod of "+high.Name+" in "+ns, err, rule, high.Name)
	}

	// A new default above the default priority would lift every
	// namespace outside the blueprint.
	def := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "new-default"}, Value: 5000, GlobalDefault: true}
	_, err = client.SchedulingV1().PriorityClasses().Create(ctx, def, dryRun)
	refusedBy(t, "a globalDefault PriorityClass at 5000", err, v1alpha1.RuleGlobalDefault, "new-default", "5000")

	// Stations keep working: a team's own classes, system namespaces.
	for ns, pc := range map[string]string{"team-a": "inference-high", "gpu-lab": "llm-high", systemNS: "system-cluster-critical", "kube-system": "system-node-critical"} {
		p := stationPod(ns, "station")
		p.Spec.PriorityClassName = pc
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, dryRun); err != nil {
			t.Errorf("a %s pod in %s, at its station: %v", pc, ns, err)
		}
	}
	d = objtest.MakeDeployment("team-a", "station", 1).Obj()
	d.Spec.Template.Spec.PriorityClassName = "inference-high"
	if _, err := client.AppsV1().Deployments("team-a").Create(ctx, d, dryRun); err != nil {
		t.Errorf("an inference-high Deployment in team-a: %v", err)
	}
}

// A namespace cannot be created claiming a team: the label would give it
// the team's name in every report.
func TestNamespaceCreatedWithATeamLabelIsRefused(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "claims-gpu-lab", Labels: map[string]string{v1alpha1.LabelTeam: "gpu-lab"}}}
	_, err := client.CoreV1().Namespaces().Create(ctx, ns, dryRun)
	refusedBy(t, "creating a namespace labelled as team gpu-lab's", err, v1alpha1.RuleNamespaceLabels)
	ns.Labels = nil
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, dryRun); err != nil {
		t.Errorf("creating a plain namespace: %v", err)
	}
}

// Pool selection in every spelling the scheduler reads reaches the GPU
// and System pools as surely as berth.io/pool In does.
func TestPoolSelectionInAnySpelling(t *testing.T) {
	ctx := context.Background()
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	for _, tc := range []struct {
		name     string
		ns       string
		selector map[string]string
		affinity *corev1.Affinity
		rule     string
	}{
		{"NotIn every other pool", "web", nil, required(expr("berth.io/pool", corev1.NodeSelectorOpNotIn, "system", "cpu", "appsnodepool")), v1alpha1.RuleGPUNamespace},
		{"Exists on the GPU count", "web", nil, required(expr("nvidia.com/gpu.count", corev1.NodeSelectorOpExists)), v1alpha1.RuleGPUNamespace},
		{"Gt on the GPU count", "web", nil, required(expr("nvidia.com/gpu.count", corev1.NodeSelectorOpGt, "0")), v1alpha1.RuleGPUNamespace},
		{"matchFields on a GPU node's name", "web", nil, required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-0"}}}}), v1alpha1.RuleGPUNamespace},
		{"a GPU node's hostname", "web", map[string]string{corev1.LabelHostname: "gpu-1"}, nil, v1alpha1.RuleGPUNamespace},
		{"a GPU pool's instance type", "web", map[string]string{corev1.LabelInstanceTypeStable: "c24-m96gi-1xnvidia-l4"}, nil, v1alpha1.RuleGPUNamespace},
		{"the spot capacity type", "web", map[string]string{"karpenter.sh/capacity-type": "spot"}, nil, v1alpha1.RuleGPUNamespace},
		{"a System node's hostname", "team-a", map[string]string{corev1.LabelHostname: "system-0"}, nil, v1alpha1.RuleSystemPool},
		{"the System mode label", "team-a", map[string]string{"berth.io/mode": "system"}, nil, v1alpha1.RuleSystemPool},
		{"DoesNotExist on anything a user pool has", "team-a", nil, required(expr("berth.io/mode", corev1.NodeSelectorOpNotIn, "user")), v1alpha1.RuleSystemPool},
	} {
		p := stationPod(tc.ns, "select")
		p.Spec.NodeSelector, p.Spec.Affinity = tc.selector, tc.affinity
		_, err := client.CoreV1().Pods(tc.ns).Create(ctx, p, dryRun)
		refusedBy(t, tc.name, err, tc.rule)
	}
	// A selection that leaves an ordinary pool open is not refused: the
	// pod can only land where it tolerates.
	p := stationPod("web", "select")
	p.Spec.Affinity = required(expr("berth.io/pool", corev1.NodeSelectorOpNotIn, "gpu"))
	if _, err := client.CoreV1().Pods("web").Create(ctx, p, dryRun); err != nil {
		t.Errorf("NotIn gpu (cpu and others left open): %v", err)
	}
}

// A pod created with a scheduling gate may have node selection added
// before it is scheduled; that update is checked as a creation is.
func TestGatedPodUpdatedOntoAPoolIsRefused(t *testing.T) {
	ctx := context.Background()
	for ns, tc := range map[string]struct {
		selector map[string]string
		rule     string
	}{
		"web":    {map[string]string{"agentpool": "gpu"}, v1alpha1.RuleGPUNamespace},
		"team-a": {map[string]string{"berth.io/pool": "system"}, v1alpha1.RuleSystemPool},
	} {
		p := stationPod(ns, fmt.Sprintf("gated-%d", time.Now().UnixNano()%100000))
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a gated pod in %s: %v", ns, err)
		}
		t.Cleanup(func() { client.CoreV1().Pods(ns).Delete(context.Background(), created.Name, metav1.DeleteOptions{}) })
		// The scheduler writes the pod's gated condition meanwhile: a
		// conflict is retried, a refusal is the answer.
		update := func(selector map[string]string) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p, err := client.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				p.Spec.NodeSelector = selector
				_, err = client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
				return err
			})
		}
		refusedBy(t, "a gated pod in "+ns+" updated with nodeSelector "+fmt.Sprint(tc.selector), update(tc.selector), tc.rule)
		// Kubernetes would have taken it: the same change to a pod that
		// berth does not object to goes through.
		if err := update(map[string]string{"berth.io/pool": "cpu"}); err != nil {
			t.Errorf("a gated pod in %s updated onto the cpu pool: %v", ns, err)
		}
	}
}

// Leaving the class label off exempts nothing: a pod at a class's
// priority is of that class, and a label that contradicts it is refused.
func TestPriorityClassImpliesTheClass(t *testing.T) {
	ctx := context.Background()
	p := anyGPUPod(gpuLab, "unlabelled", "training-low")
	p.Labels = nil
	got, err := client.CoreV1().Pods(gpuLab).Create(ctx, p, dryRun)
	if err != nil {
		t.Fatalf("a training-low GPU pod without a class label: %v", err)
	}
	if got.Labels[v1alpha1.LabelClass] != "training" || got.Spec.Affinity == nil || got.Spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("a training-low pod without the label got labels %v and affinity %+v; want class training with its isolation", got.Labels, got.Spec.Affinity)
	}
	p = anyGPUPod(gpuLab, "mislabelled", "training-low")
	p.Labels = map[string]string{v1alpha1.LabelClass: "batch"}
	_, err = client.CoreV1().Pods(gpuLab).Create(ctx, p, dryRun)
	refusedBy(t, "a training-low pod labelled batch", err, v1alpha1.RuleClassPriority, "training-low", "class training")
}

// GPUs asked for in requests alone are refused with berth's rule and fix,
// in a pod and in a template.
func TestGPURequestWithoutLimitIsExplained(t *testing.T) {
	ctx := context.Background()
	p := stationPod("team-a", "requests-only")
	p.Spec.Containers[0].Resources.Requests = gpuLimits("1")
	_, err := client.CoreV1().Pods("team-a").Create(ctx, p, dryRun)
	refusedBy(t, "a pod with a GPU request and no limit", err, v1alpha1.RuleGPULimit, "container app", `resources.limits["nvidia.com/gpu"]`)
	d := objtest.MakeDeployment("team-a", "requests-only", 1).Obj()
	d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "fetch", Image: "x", Resources: corev1.ResourceRequirements{Requests: gpuLimits("1")}}}
	_, err = client.AppsV1().Deployments("team-a").Create(ctx, d, dryRun)
	refusedBy(t, "a Deployment whose init container asks for a GPU without a limit", err, v1alpha1.RuleGPULimit, "container fetch")
}

// A chart that labels only the pod template gets the class all the same.
func TestTemplateLabelCountsAsTheClass(t *testing.T) {
	ctx := context.Background()
	ns := "team-b"
	for _, obj := range []struct {
		kind   string
		create func() (*corev1.PodTemplateSpec, error)
	}{
		{"Deployment", func() (*corev1.PodTemplateSpec, error) {
			d := objtest.MakeDeployment(ns, "charted", 1).Obj()
			d.Spec.Template.Labels[v1alpha1.LabelClass] = "inference"
			got, err := client.AppsV1().Deployments(ns).Create(ctx, d, dryRun)
			if err != nil {
				return nil, err
			}
			return &got.Spec.Template, nil
		}},
		{"StatefulSet", func() (*corev1.PodTemplateSpec, error) {
			d := objtest.MakeDeployment(ns, "charted", 1).Obj()
			s := &appsv1.StatefulSet{ObjectMeta: d.ObjectMeta, Spec: appsv1.StatefulSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template}}
			s.Spec.Template.Labels[v1alpha1.LabelClass] = "inference"
			got, err := client.AppsV1().StatefulSets(ns).Create(ctx, s, dryRun)
			if err != nil {
				return nil, err
			}
			return &got.Spec.Template, nil
		}},
		{"Job", func() (*corev1.PodTemplateSpec, error) {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: gpuLab, Name: "charted"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelClass: "training"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Limits: gpuLimits("1")}}}},
			}}}
			got, err := client.BatchV1().Jobs(gpuLab).Create(ctx, j, dryRun)
			if err != nil {
				return nil, err
			}
			return &got.Spec.Template, nil
		}},
		{"CronJob", func() (*corev1.PodTemplateSpec, error) {
			cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: gpuLab, Name: "charted"}, Spec: batchv1.CronJobSpec{Schedule: "0 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelClass: "training"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Limits: gpuLimits("1")}}}},
			}}}}}
			got, err := client.BatchV1().CronJobs(gpuLab).Create(ctx, cj, dryRun)
			if err != nil {
				return nil, err
			}
			return &got.Spec.JobTemplate.Spec.Template, nil
		}},
	} {
		tmpl, err := obj.create()
		if err != nil {
			t.Errorf("%s labelled only on its template: %v", obj.kind, err)
			continue
		}
		want := map[string]string{"Deployment": "inference-high", "StatefulSet": "inference-high", "Job": "training-low", "CronJob": "training-low"}[obj.kind]
		if tmpl.Spec.PriorityClassName != want || tmpl.Spec.Affinity == nil || tmpl.Spec.Affinity.NodeAffinity == nil {
			t.Errorf("%s labelled only on its template: priorityClassName %q, affinity %+v; want %s and the class's pools", obj.kind, tmpl.Spec.PriorityClassName, tmpl.Spec.Affinity, want)
		}
	}
}
