package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spotTolerations let a pod onto both GPU pools.
var spotTolerations = []corev1.Toleration{
	{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
	{Key: "berth.io/capacity", Operator: corev1.TolerationOpEqual, Value: "spot", Effect: corev1.TaintEffectNoSchedule},
}

// anyGPUPod asks for one GPU and may run on either GPU pool.
func anyGPUPod(ns, name, priorityClass string) *corev1.Pod {
	p := gpuPod(ns, name)
	p.Spec.Tolerations = spotTolerations
	p.Spec.PriorityClassName = priorityClass
	return p
}

// clearPods deletes a namespace's pods when the test ends and waits until
// they are gone, so that the GPUs they held are free for the next test.
func clearPods(t *testing.T, ns string) {
	t.Cleanup(func() {
		ctx := context.Background()
		zero := int64(0)
		client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		eventually(t, time.Minute, "pods of "+ns+" gone", func() (bool, error) {
			l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, err
		})
	})
}

// Behaviour 4: team A, with a quota of four GPUs, cannot run a fifth GPU
// pod, and the quota error is what its user sees; team B is unaffected:
// while team A is at its limit, team B runs GPU pods up to its own quota.
func TestTeamGPUQuota(t *testing.T) {
	ctx := context.Background()
	clearPods(t, "team-a")
	clearPods(t, "team-b")
	// Team A's four pods select pool gpu, whose two GPUs run two of them;
	// the other two wait, and count against the quota all the same. That
	// leaves the spot pool's two GPUs for team B.
	for i := range 4 {
		p := anyGPUPod("team-a", fmt.Sprintf("train-%d", i), "")
		p.Spec.NodeSelector = map[string]string{poolLabel: "gpu"}
		if _, err := client.CoreV1().Pods("team-a").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("GPU pod %d of 4 in team-a refused: %v", i+1, err)
		}
	}
	_, err := client.CoreV1().Pods("team-a").Create(ctx, anyGPUPod("team-a", "train-4", ""), metav1.CreateOptions{})
	if err == nil {
		t.Fatal("a fifth GPU pod in team-a was admitted past its quota of 4")
	}
	for _, want := range []string{"exceeded quota: team-quota", "requested: requests.nvidia.com/gpu=1", "used: requests.nvidia.com/gpu=4", "limited: requests.nvidia.com/gpu=4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("quota error %q does not say %q", err, want)
		}
	}

	for i := range 2 {
		p := anyGPUPod("team-b", fmt.Sprintf("serve-%d", i), "")
		p.Labels = map[string]string{"app": "serve"}
		p.Spec.NodeSelector = map[string]string{poolLabel: "spot-gpu"}
		if _, err := client.CoreV1().Pods("team-b").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("team-b's GPU pod %d of 2 refused while team-a is at its quota: %v", i+1, err)
		}
	}
	running := runningPods(t, "team-b", "app=serve", 2)
	if by := countBy(t, running, poolLabel); by["spot-gpu"] != 2 {
		t.Errorf("team-b's GPU pods by pool = %v, want both running on spot-gpu", by)
	}
	// Each quota counts its own namespace's pods: team A's four, team B's two.
	for ns, want := range map[string]string{"team-a": "4", "team-b": "2"} {
		eventually(t, 30*time.Second, ns+"'s quota to count its own GPU pods", func() (bool, error) {
			q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, "team-quota", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			used := q.Status.Used["requests.nvidia.com/gpu"]
			return used.Cmp(resource.MustParse(want)) == 0, nil
		})
	}
	// Team B's quota, like team A's, refuses one more.
	if _, err := client.CoreV1().Pods("team-b").Create(ctx, anyGPUPod("team-b", "serve-2", ""), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "limited: requests.nvidia.com/gpu=2") {
		t.Errorf("a third GPU pod in team-b: %v, want its own quota of 2 to refuse it", err)
	}
}

// Behaviour 8: a container that names no resources gets the LimitRange's
// defaults, and the quota counts them.
func TestLimitRangeDefaultsCountAgainstQuota(t *testing.T) {
	ctx := context.Background()
	clearPods(t, "team-a")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "no-requests"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "python"}}},
	}
	got, err := client.CoreV1().Pods("team-a").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod without requests was refused in a namespace with a LimitRange: %v", err)
	}
	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	if d := cmp.Diff(want.Requests.Cpu().String(), got.Spec.Containers[0].Resources.Requests.Cpu().String()); d != "" {
		t.Errorf("defaulted cpu request (-want +got): %s", d)
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if r, w := got.Spec.Containers[0].Resources.Requests[name], want.Requests[name]; r.Cmp(w) != 0 {
			t.Errorf("request %s = %s, want the LimitRange default %s", name, r.String(), w.String())
		}
		if l, w := got.Spec.Containers[0].Resources.Limits[name], want.Limits[name]; l.Cmp(w) != 0 {
			t.Errorf("limit %s = %s, want the LimitRange default %s", name, l.String(), w.String())
		}
	}
	if _, ok := got.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; ok {
		t.Error("the LimitRange gave a GPU limit to a container that asked for none")
	}
	eventually(t, 30*time.Second, "team-a's quota to count the defaulted requests", func() (bool, error) {
		q, err := client.CoreV1().ResourceQuotas("team-a").Get(ctx, "team-quota", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cpu, mem := q.Status.Used[corev1.ResourceRequestsCPU], q.Status.Used[corev1.ResourceRequestsMemory]
		return cpu.Cmp(resource.MustParse("500m")) == 0 && mem.Cmp(resource.MustParse("512Mi")) == 0, nil
	})
	// A container above the LimitRange's maximum (the largest machine)
	// is refused at admission rather than left Pending forever.
	big := pod.DeepCopy()
	big.Name = "too-big"
	big.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	if _, err := client.CoreV1().Pods("team-a").Create(ctx, big, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "maximum cpu usage per Container is 24") {
		t.Errorf("a 64-CPU container was not refused with the LimitRange maximum: %v", err)
	}
}
