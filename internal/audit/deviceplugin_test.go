package audit

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

// On a live cluster: the device plugin tolerates pool l4's taint but not
// pool a100's, so audit names pool a100, its taint and the toleration to
// add, and the a100 node that advertises no GPUs. The l4 node whose
// plugin pod is Running is fine, and so is the one that already
// advertises its GPU.
func TestDevicePluginLive(t *testing.T) {
	gpuNode := func(name, pool, taintKey string, gpus string) corev1.Node {
		return corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"berth.io/pool": pool, "nvidia.com/gpu.product": "X"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: taintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}},
		}
	}
	yes := true
	pluginPod := func(node string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plugin-" + node,
				OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "plugin", Controller: &yes}}},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	inv := &Inventory{
		Nodes: []corev1.Node{
			gpuNode("l4-0", "l4", "gpu", "0"), gpuNode("l4-1", "l4", "gpu", "1"),
			gpuNode("a100-0", "a100", "a100", "0"),
		},
		DaemonSets: []appsv1.DaemonSet{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plugin"},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "c", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}},
			}}},
		}},
		Pods: []corev1.Pod{pluginPod("l4-0", corev1.PodRunning), pluginPod("a100-0", corev1.PodPending)},
	}
	r := Check(inv, Options{
		DevicePlugin: Object{Kind: "DaemonSet", Namespace: "kube-system", Name: "plugin"},
		GPUPools:     map[string][]corev1.Taint{"l4": nil, "a100": nil},
	})
	got := map[string]Finding{}
	for _, f := range r.Findings {
		if f.Rule == v1alpha1.RuleDevicePlugin {
			got[f.Object.String()] = f
		}
	}
	ds, ok := got["DaemonSet kube-system/plugin"]
	if !ok || !strings.Contains(ds.Message, "GPU pool a100") || !strings.Contains(ds.Message, "a100=true:NoSchedule") ||
		ds.Fix != "add the toleration {key: a100, operator: Exists, effect: NoSchedule} to spec.template.spec.tolerations" {
		t.Errorf("DaemonSet finding = %+v, want pool a100, its taint and the toleration to add", ds)
	}
	node, ok := got["Node/a100-0"]
	if !ok || !strings.Contains(node.Message, "advertise no GPUs") || !strings.Contains(node.Fix, "{key: a100, operator: Exists, effect: NoSchedule}") {
		t.Errorf("Node finding = %+v, want a100-0 advertising no GPUs and the toleration to add", node)
	}
	if len(got) != 2 {
		t.Errorf("findings %v, want only the DaemonSet's and node a100-0's", got)
	}

	// A plugin that tolerates every pool: the node still without GPUs and
	// without a Running plugin pod is reported, with how to find out why.
	inv.DaemonSets[0].Spec.Template.Spec.Tolerations = append(inv.DaemonSets[0].Spec.Template.Spec.Tolerations, corev1.Toleration{Key: "a100", Operator: corev1.TolerationOpExists})
	r = Check(inv, Options{})
	var findings []Finding
	for _, f := range r.Findings {
		if f.Rule == v1alpha1.RuleDevicePlugin {
			findings = append(findings, f)
		}
	}
	if len(findings) != 1 || findings[0].Object.Name != "a100-0" || !strings.Contains(findings[0].Fix, "--field-selector spec.nodeName=a100-0") {
		t.Errorf("findings %+v, want node a100-0 and how to find its plugin pod", findings)
	}
}

// A blueprint without GPU pools (berth's scale benchmark's) on a cluster
// without GPU nodes: the device plugin berth installs tolerates no GPU
// taint, and nothing says it must. Without a blueprint, the same plugin
// is held to the design's gpu=true:NoSchedule.
func TestDevicePluginNoGPUPools(t *testing.T) {
	inv := &Inventory{
		Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "work-0", Labels: map[string]string{"berth.io/pool": "work"}}}},
		DaemonSets: []appsv1.DaemonSet{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin-daemonset"},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers:  []corev1.Container{{Name: "c", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}},
			}}},
		}},
	}
	count := func(o Options) int {
		n := 0
		for _, f := range Check(inv, o).Findings {
			if f.Rule == v1alpha1.RuleDevicePlugin {
				n++
			}
		}
		return n
	}
	var withBlueprint Options
	withBlueprint.UseBlueprint(&v1alpha1.Blueprint{Spec: v1alpha1.Spec{Pools: []v1alpha1.Pool{{Name: "work"}}}})
	if n := count(withBlueprint); n != 0 {
		t.Errorf("%d device-plugin findings with a blueprint that has no GPU pool, want none", n)
	}
	if n := count(Options{}); n != 1 {
		t.Errorf("%d device-plugin findings without a blueprint, want the design's GPU taint named once", n)
	}
}
