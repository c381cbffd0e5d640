package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
)

// devicePluginDaemonSet is the GPU device plugin's DaemonSet as `berth
// up` installs it: NVIDIA's static manifest (nvidia-device-plugin.yml)
// with what its Helm chart adds, made to fit the blueprint. It tolerates
// every GPU pool's taints, nvidia.com/gpu and CriticalAddonsOnly, runs
// only on GPU nodes (nvidia.com/gpu.product), and is a critical add-on
// (system-node-critical). On the local cluster its pod stands for the
// plugin: a GPU node advertises its GPUs while the pod is Running there.
func devicePluginDaemonSet(bp *v1alpha1.Blueprint) *appsv1.DaemonSet {
	d := bp.Spec.DevicePlugin
	if d == nil {
		d = &v1alpha1.DevicePlugin{}
	}
	ns, name, image := d.Namespace, d.Name, d.Image
	if ns == "" {
		ns = v1alpha1.DefaultDevicePluginNamespace
	}
	if name == "" {
		name = v1alpha1.DefaultDevicePluginName
	}
	if image == "" {
		image = v1alpha1.DefaultDevicePluginImage
	}
	labels := map[string]string{"name": name}
	hostPath := corev1.HostPathDirectory
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.LabelAppName: "nvidia-device-plugin"}},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					PriorityClassName: "system-node-critical",
					Tolerations:       devicePluginTolerations(bp),
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1alpha1.LabelGPUProduct, Operator: corev1.NodeSelectorOpExists}},
						}}},
					}},
					Containers: []corev1.Container{{
						Name:  "nvidia-device-plugin-ctr",
						Image: image,
						Env:   []corev1.EnvVar{{Name: "FAIL_ON_INIT_ERROR", Value: "false"}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("10m"),
							corev1.ResourceMemory: resource.MustParse("32Mi"),
						}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: new(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "device-plugin", MountPath: "/var/lib/kubelet/device-plugins"}},
					}},
					Volumes: []corev1.Volume{{Name: "device-plugin", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/device-plugins", Type: &hostPath},
					}}},
				},
			},
		},
	}
}

// devicePluginTolerations tolerate each GPU pool's taints, and what
// NVIDIA's chart tolerates: nvidia.com/gpu and CriticalAddonsOnly.
func devicePluginTolerations(bp *v1alpha1.Blueprint) []corev1.Toleration {
	var out []corev1.Toleration
	seen := map[corev1.Toleration]bool{}
	add := func(t corev1.Toleration) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if p.GPUResource() == "" {
			continue
		}
		for _, t := range p.Taints {
			tol := corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect}
			if t.Value == "" {
				tol.Operator = corev1.TolerationOpExists
			}
			add(tol)
		}
	}
	add(corev1.Toleration{Key: v1alpha1.TaintNVIDIAGPU, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	add(corev1.Toleration{Key: v1alpha1.TaintCriticalAddonsOnly, Operator: corev1.TolerationOpExists})
	return out
}

// installsDevicePlugin reports whether `berth up` installs bp's device
// plugin.
func installsDevicePlugin(bp *v1alpha1.Blueprint) bool {
	d := bp.Spec.DevicePlugin
	return d == nil || d.Install == nil || *d.Install
}

// installDevicePlugin applies the device plugin's DaemonSet with berth's
// field manager, taking back fields others changed: `berth up` installs
// what the blueprint says.
func installDevicePlugin(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint) error {
	ds := devicePluginDaemonSet(bp)
	body, err := json.Marshal(ds)
	if err != nil {
		return err
	}
	force := true
	_, err = c.AppsV1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("installing the device plugin (DaemonSet %s/%s): %w", ds.Namespace, ds.Name, err)
	}
	return nil
}

// gpusAdvertised reports whether each of the named nodes advertises
// every device of its machine.
func gpusAdvertised(ctx context.Context, client kubernetes.Interface, names []string) (bool, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelGPUProduct, ResourceVersion: "0"})
	if err != nil {
		return false, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for i := range list.Items {
		n := &list.Items[i]
		if !want[n.Name] {
			continue
		}
		if ok, err := advertises(n); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// advertises reports whether a node's allocatable holds every device of
// its machine (none for a node without GPUs).
func advertises(n *corev1.Node) (bool, error) {
	devices, err := pools.ParseResources(n.Annotations[v1alpha1.AnnotationDevices])
	if err != nil {
		return false, fmt.Errorf("node %s: annotation %s: %w", n.Name, v1alpha1.AnnotationDevices, err)
	}
	for r, q := range devices {
		if got := n.Status.Allocatable[r]; got.Cmp(q) < 0 {
			return false, nil
		}
	}
	return true, nil
}

// startDevicePlugin installs the device plugin when the blueprint asks
// for it and waits until every GPU node of the blueprint advertises its
// GPUs, so that GPU work started right after `berth up` does not race
// the plugin.
func (c *Cluster) startDevicePlugin(ctx context.Context, client kubernetes.Interface, bp *v1alpha1.Blueprint, step func(string, ...any)) error {
	if !installsDevicePlugin(bp) {
		return nil
	}
	ds := devicePluginDaemonSet(bp)
	// The ServiceAccount admission plugin refuses pods until their
	// namespace's default ServiceAccount exists, and the DaemonSet
	// controller backs off after each refusal.
	if err := c.waitFor(ctx, "the default ServiceAccount in "+ds.Namespace, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ds.Namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return err
	}
	if err := installDevicePlugin(ctx, client, bp); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the GPU nodes to advertise their GPUs (the device plugin's pods to run)", func(ctx context.Context) (bool, error) {
		return gpusAdvertised(ctx, client, c.Nodes)
	}); err != nil {
		return err
	}
	step("device plugin running, GPUs advertised")
	return nil
}
