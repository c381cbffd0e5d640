package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
)

// Class labels alone put inference on its pools with inference-high and
// zone spread, and training on the spot and on-demand GPU pools (spot
// preferred) with training-low, which never preempts. Every mutation is
// checked on the object the API server stored and on the pods it ran.
func TestClassLabelsPlaceWorkloads(t *testing.T) {
	ctx := context.Background()
	name := "serve-" + fmt.Sprint(time.Now().UnixNano()%100000)
	d := objtest.MakeDeployment("team-a", name, 6).Obj()
	d.Labels[v1alpha1.LabelClass] = "inference"
	got, err := client.AppsV1().Deployments("team-a").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.AppsV1().Deployments("team-a").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	spec := got.Spec.Template.Spec
	if spec.PriorityClassName != "inference-high" {
		t.Errorf("inference template priorityClassName = %q, want inference-high", spec.PriorityClassName)
	}
	if got.Spec.Template.Labels[v1alpha1.LabelClass] != "inference" {
		t.Errorf("inference template labels = %v, want berth.io/class so its budget selects the pods", got.Spec.Template.Labels)
	}
	if len(spec.Tolerations) != 0 {
		t.Errorf("a CPU inference template got tolerations %v; the cpu pool has no taints and the GPU pool is for GPU pods", spec.Tolerations)
	}
	wantAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "berth.io/pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"cpu"}}},
	}}}}
	if spec.Affinity == nil || !cmp.Equal(wantAffinity, spec.Affinity.NodeAffinity) {
		t.Errorf("inference CPU node affinity (-want +got):\n%s", cmp.Diff(wantAffinity, spec.Affinity))
	}
	if len(spec.TopologySpreadConstraints) != 1 || spec.TopologySpreadConstraints[0].TopologyKey != corev1.LabelTopologyZone || spec.TopologySpreadConstraints[0].MaxSkew != 1 {
		t.Errorf("inference spread = %+v, want one zone constraint with maxSkew 1", spec.TopologySpreadConstraints)
	}
	pods := runningPods(t, "team-a", "app="+name, 6)
	if by := countBy(t, pods, poolLabel); by["cpu"] != 6 {
		t.Errorf("inference pods by pool = %v, want all 6 on cpu", by)
	}
	if by := countBy(t, pods, corev1.LabelTopologyZone); !cmp.Equal(by, map[string]int{"zone-1": 2, "zone-2": 2, "zone-3": 2}) {
		t.Errorf("inference pods by zone = %v, want 2/2/2", by)
	}
	for _, p := range pods {
		if p.Spec.Priority == nil || *p.Spec.Priority != 100000 {
			t.Errorf("inference pod %s priority %v, want inference-high's 100000", p.Name, p.Spec.Priority)
		}
	}

	clearPods(t, gpuLab)
	jobName := "train-" + fmt.Sprint(time.Now().UnixNano()%100000)
	parallel := int32(2)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: gpuLab, Name: jobName, Labels: map[string]string{v1alpha1.LabelClass: "training"}},
		Spec: batchv1.JobSpec{
			Parallelism: &parallel, Completions: &parallel,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "train", Image: "trainer", Resources: corev1.ResourceRequirements{
					Limits: gpuLimits("1"),
				}}},
			}},
		},
	}
	gotJob, err := client.BatchV1().Jobs(gpuLab).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a training Job with nothing but its class label and a GPU limit: %v", err)
	}
	propagation := metav1.DeletePropagationBackground
	t.Cleanup(func() {
		client.BatchV1().Jobs(gpuLab).Delete(context.Background(), jobName, metav1.DeleteOptions{PropagationPolicy: &propagation})
	})
	js := gotJob.Spec.Template.Spec
	if js.PriorityClassName != "training-low" {
		t.Errorf("training template priorityClassName = %q, want training-low", js.PriorityClassName)
	}
	wantTols := []corev1.Toleration{
		{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "berth.io/capacity", Operator: corev1.TolerationOpEqual, Value: "spot", Effect: corev1.TaintEffectNoSchedule},
	}
	if d := cmp.Diff(wantTols, js.Tolerations); d != "" {
		t.Errorf("training tolerations (-want +got):\n%s", d)
	}
	if a := js.Affinity; a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 2 ||
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Values[0] != "spot-gpu" {
		t.Errorf("training affinity = %+v, want spot-gpu preferred over gpu", js.Affinity)
	}
	var trainPods []corev1.Pod
	eventually(t, time.Minute, "two training pods running", func() (bool, error) {
		l, err := client.CoreV1().Pods(gpuLab).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + jobName})
		if err != nil {
			return false, err
		}
		trainPods = nil
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				trainPods = append(trainPods, p)
			}
		}
		return len(trainPods) == 2, nil
	})
	nodes := nodeLabels(t)
	for _, p := range trainPods {
		if pool := nodes[p.Spec.NodeName][poolLabel]; pool != "spot-gpu" {
			t.Errorf("training pod %s on pool %s, want spot-gpu (preferred, and free)", p.Name, pool)
		}
		if p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever {
			t.Errorf("training pod %s preemptionPolicy %v, want Never", p.Name, p.Spec.PreemptionPolicy)
		}
	}
}

// A bare Pod of a class gets its tolerations and affinity, but must name
// its priority class itself: priority is settled before mutation.
func TestClassBarePod(t *testing.T) {
	ctx := context.Background()
	clearPods(t, gpuLab)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: gpuLab, Name: "bare-train", Labels: map[string]string{v1alpha1.LabelClass: "training"}},
		Spec: corev1.PodSpec{
			PriorityClassName: "training-low",
			Containers:        []corev1.Container{{Name: "train", Image: "trainer", Resources: corev1.ResourceRequirements{Limits: gpuLimits("1")}}},
		},
	}
	got, err := client.CoreV1().Pods(gpuLab).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Tolerations) < 2 || got.Spec.Affinity == nil || got.Spec.Affinity.NodeAffinity == nil {
		t.Errorf("bare training pod was not given its class's tolerations and affinity: %+v %+v", got.Spec.Tolerations, got.Spec.Affinity)
	}
	pod.Name, pod.Spec.PriorityClassName = "bare-unnamed", ""
	pod.Labels = map[string]string{v1alpha1.LabelClass: "inference"}
	_, err = client.CoreV1().Pods(gpuLab).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !containsAll(err.Error(), v1alpha1.RuleClassPriority, "inference-high") {
		t.Errorf("a bare inference pod without its priority class: %v, want %s naming inference-high", err, v1alpha1.RuleClassPriority)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// StatefulSets and CronJobs of a class are mutated like Deployments and
// Jobs (checked on what a server-side dry run would store).
func TestClassMutatesStatefulSetsAndCronJobs(t *testing.T) {
	ctx := context.Background()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	d := objtest.MakeDeployment("team-a", "db", 3).Obj()
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db", Labels: map[string]string{v1alpha1.LabelClass: "inference"}},
		Spec:       appsv1.StatefulSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
	got, err := client.AppsV1().StatefulSets("team-a").Create(ctx, ss, dry)
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Spec.Template.Spec; s.PriorityClassName != "inference-high" || len(s.TopologySpreadConstraints) != 1 ||
		s.TopologySpreadConstraints[0].MatchLabelKeys[len(s.TopologySpreadConstraints[0].MatchLabelKeys)-1] != "controller-revision-hash" {
		t.Errorf("inference StatefulSet template: priorityClassName %q, spread %+v; want inference-high and a zone spread keyed on the revision", s.PriorityClassName, s.TopologySpreadConstraints)
	}
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: gpuLab, Name: "nightly", Labels: map[string]string{v1alpha1.LabelClass: "training"}},
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "train", Image: "trainer", Resources: corev1.ResourceRequirements{Limits: gpuLimits("1")}}},
		}}}}},
	}
	gotCJ, err := client.BatchV1().CronJobs(gpuLab).Create(ctx, cj, dry)
	if err != nil {
		t.Fatal(err)
	}
	if s := gotCJ.Spec.JobTemplate.Spec.Template.Spec; s.PriorityClassName != "training-low" || len(s.Tolerations) != 2 || s.Affinity == nil {
		t.Errorf("training CronJob template: priorityClassName %q, tolerations %v, affinity %v; want training-low and the GPU pools'", s.PriorityClassName, s.Tolerations, s.Affinity)
	}
}
