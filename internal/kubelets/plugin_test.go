package kubelets

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

// The device plugin tolerates every GPU pool's taints (a pool tainted
// with a value tolerates that value; one without, any), and nothing of
// the pools without GPUs.
func TestDevicePluginToleratesEveryGPUPool(t *testing.T) {
	bp := &v1alpha1.Blueprint{Spec: v1alpha1.Spec{Pools: []v1alpha1.Pool{
		{Name: "cpu", Taints: []v1alpha1.Taint{v1alpha1.MustParseTaint("cpu-only=true:NoSchedule")}},
		{Name: "a100", Machine: v1alpha1.Machine{GPU: &v1alpha1.GPU{Count: 8, Product: "NVIDIA-A100"}}, Taints: []v1alpha1.Taint{v1alpha1.MustParseTaint("gpu=true:NoSchedule")}},
		{Name: "h100", Machine: v1alpha1.Machine{GPU: &v1alpha1.GPU{Count: 8, Product: "NVIDIA-A100"}}, Taints: []v1alpha1.Taint{v1alpha1.MustParseTaint("accelerator:NoExecute")}},
	}}}

	got := DevicePluginDaemonSet(bp).Spec.Template.Spec.Tolerations
	for _, want := range []corev1.Toleration{
		{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "accelerator", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	} {
		if !slices.Contains(got, want) {
			t.Errorf("tolerations %v lack %v", got, want)
		}
	}
	for _, tol := range got {
		if tol.Key == "cpu-only" {
			t.Errorf("tolerations %v tolerate the cpu pool's taint", got)
		}
	}
}
