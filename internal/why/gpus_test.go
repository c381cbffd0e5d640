package why

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/objtest"
)

// darkGPUNode is a GPU node whose device plugin has not advertised its
// GPU: the machine has one (nvidia.com/gpu.count), allocatable has none.
func darkGPUNode(name string) *objtest.NodeWrapper {
	b := poolNode(name, "gpu").CPU("24").Taint("gpu=true:NoSchedule").Label("nvidia.com/gpu.count", "1")
	return b
}

func devicePlugin(tolerations ...corev1.Toleration) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin-daemonset"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Tolerations: tolerations,
			Containers:  []corev1.Container{{Name: "plugin", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}},
		}}},
	}
}

func TestInvisibleGPUs(t *testing.T) {
	ns := nodes(poolNode("cpu-0", "cpu"), darkGPUNode("gpu-0"), darkGPUNode("gpu-1").Zone("zone-2"))
	pod := objtest.MakePod("team-a", "train").GPU("1").Toleration(tolerateGPU).Obj()

	// No DaemonSet at all.
	s := snapshotOf(ns)
	wantTop(t, Explain(s, pod), CauseGPUsInvisible, []string{
		"GPU nodes advertise no nvidia.com/gpu: pool gpu (2 nodes of 2), though their machines have GPUs (nvidia.com/gpu.count)",
		"there is no device-plugin DaemonSet kube-system/nvidia-device-plugin-daemonset to advertise them",
	}, []string{"install the NVIDIA device plugin as DaemonSet kube-system/nvidia-device-plugin-daemonset"})

	// A DaemonSet that does not tolerate the pool's taint.
	s = snapshotOf(ns)
	s.DevicePlugin = devicePlugin()
	wantTop(t, Explain(s, pod), CauseGPUsInvisible,
		[]string{"device-plugin DaemonSet kube-system/nvidia-device-plugin-daemonset does not tolerate pool gpu's taint gpu=true:NoSchedule"},
		[]string{`add to DaemonSet kube-system/nvidia-device-plugin-daemonset's spec.template.spec.tolerations {key: gpu, operator: Equal, value: "true", effect: NoSchedule}`})

	// A node that has just joined is also not Ready: the DaemonSet
	// controller's own tolerations cover that taint, not the pool's, so
	// the pool's taint is still the one in the way, whichever comes first.
	joining := nodes(poolNode("cpu-0", "cpu"), darkGPUNode("gpu-0"))
	joining[1].Spec.Taints = append([]corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, joining[1].Spec.Taints...)
	s = snapshotOf(joining)
	s.DevicePlugin = devicePlugin()
	wantTop(t, Explain(s, pod), CauseGPUsInvisible,
		[]string{"device-plugin DaemonSet kube-system/nvidia-device-plugin-daemonset does not tolerate pool gpu's taint gpu=true:NoSchedule"}, nil)

	// It tolerates the taint, but selects other nodes.
	s = snapshotOf(ns)
	s.DevicePlugin = devicePlugin(corev1.Toleration{Operator: corev1.TolerationOpExists})
	s.DevicePlugin.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.count", Operator: corev1.NodeSelectorOpGt, Values: []string{"1"}}}}}}}}
	wantTop(t, Explain(s, pod), CauseGPUsInvisible,
		[]string{"device-plugin DaemonSet kube-system/nvidia-device-plugin-daemonset's node selector or affinity leaves out pool gpu's nodes"},
		[]string{"let DaemonSet kube-system/nvidia-device-plugin-daemonset select the GPU nodes"})

	// It tolerates everything, but its pods are not Running.
	starting := *objtest.MakePod("kube-system", "nvidia-device-plugin-daemonset-abc").Owner("DaemonSet", "nvidia-device-plugin-daemonset").On("gpu-0").Obj()
	starting.Status.Phase = corev1.PodPending
	starting.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "plugin", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	s = snapshotOf(ns, starting)
	s.DevicePlugin = devicePlugin(corev1.Toleration{Operator: corev1.TolerationOpExists})
	v := Explain(s, pod)
	wantTop(t, v, CauseGPUsInvisible,
		[]string{"is not Running on them: pod nvidia-device-plugin-daemonset-abc on gpu-0 is Pending (ContainerCreating), no pod on gpu-1"},
		[]string{"get DaemonSet kube-system/nvidia-device-plugin-daemonset's pods Running"})
	if c := cause(v, CauseResources); c == nil {
		t.Errorf("the resource verdict is not kept among the causes: %+v", v.Causes)
	}

	// With the GPUs advertised, nothing is said.
	s = snapshotOf(nodes(gpuNode("gpu-0").Label("nvidia.com/gpu.count", "1")))
	if c := cause(Explain(s, pod), CauseGPUsInvisible); c != nil || Explain(s, pod).Top.Code == CauseGPUsInvisible {
		t.Errorf("visible GPUs reported invisible: %+v", c)
	}
}
