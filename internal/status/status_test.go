package status

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"berth.io/berth/api/v1alpha1"
)

// A pool's requested resources are the sum of its nodes' pods' requests,
// counted as the scheduler counts them (an init container larger than the
// app's sets the pod's request); pods on no node or on a node of another
// pool do not count.
func TestCollectRequestsByPool(t *testing.T) {
	node := func(name, pool string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelPool: pool}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		}
	}
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	pod := func(name, nodeName, app, init string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			Spec: corev1.PodSpec{
				NodeName:   nodeName,
				Containers: []corev1.Container{{Name: "app", Resources: cpu(app)}},
			},
		}
		if init != "" {
			p.Spec.InitContainers = []corev1.Container{{Name: "pull", Resources: cpu(init)}}
		}
		return p
	}
	objs := []runtime.Object{
		node("cpu-0", "cpu"), node("cpu-1", "cpu"), node("gpu-0", "gpu"),
		pod("a", "cpu-0", "500m", ""),
		pod("b", "cpu-0", "250m", "2"), // its init container's 2 CPUs count
		pod("c", "cpu-1", "1", ""),
		pod("d", "gpu-0", "3", ""),
		pod("pending", "", "7", ""),
	}
	sum, err := Collect(context.Background(), fake.NewClientset(objs...), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "3500m", "gpu": "3"}
	if len(sum.Pools) != len(want) {
		t.Fatalf("pools = %+v, want %v", sum.Pools, want)
	}
	for _, p := range sum.Pools {
		got := p.Requested[corev1.ResourceCPU]
		if got.Cmp(resource.MustParse(want[p.Name])) != 0 {
			t.Errorf("pool %s requests %s CPU, want %s", p.Name, got.String(), want[p.Name])
		}
	}
}
