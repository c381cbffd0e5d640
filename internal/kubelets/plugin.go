package kubelets

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/recorded"
)

// DevicePluginDaemonSet is the GPU device plugin's DaemonSet as `berth
// up` installs it: NVIDIA's static manifest (nvidia-device-plugin.yml)
// with what its Helm chart adds, made to fit the blueprint. It tolerates
// every GPU pool's taints, nvidia.com/gpu and CriticalAddonsOnly, runs
// only on GPU nodes (nvidia.com/gpu.product), and is a critical add-on
// (system-node-critical). On the local cluster its pod stands for the
// plugin: a GPU node advertises its GPUs while the pod is Running there.
func DevicePluginDaemonSet(bp *v1alpha1.Blueprint) *appsv1.DaemonSet {
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

// InstallsDevicePlugin reports whether `berth up` installs bp's device
// plugin.
func InstallsDevicePlugin(bp *v1alpha1.Blueprint) bool {
	d := bp.Spec.DevicePlugin
	return d == nil || d.Install == nil || *d.Install
}

// InstallDevicePlugin applies the device plugin's DaemonSet with berth's
// field manager, taking back fields others changed: `berth up` installs
// what the blueprint says.
func InstallDevicePlugin(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint) error {
	ds := DevicePluginDaemonSet(bp)
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

// PluginController keeps the device plugin's DaemonSet that `berth up`
// installed as the recorded blueprint says: a `berth apply` that taints a
// GPU pool differently, adds one, or names another image reaches the
// DaemonSet, so its pods keep running on every GPU node (and the nodes
// keep advertising their GPUs). It updates only a DaemonSet berth's field
// manager applied: a plugin the blueprint names but someone else runs
// (devicePlugin.install false, or a name berth never installed) is left
// to whoever runs it, as on a cloud.
type PluginController struct {
	client     kubernetes.Interface
	blueprints *recorded.Store
	// blueprint names the blueprint `berth up` started, whose plugin it
	// installed; another blueprint sharing the cluster (guardrails Off)
	// names no plugin of berth's, even under the same default name.
	blueprint string
}

// NewPluginController returns the controller that keeps the device
// plugin `berth up` installed for blueprint current, reading its record
// in blueprints.
func NewPluginController(client kubernetes.Interface, blueprints *recorded.Store, blueprint string) *PluginController {
	return &PluginController{client: client, blueprints: blueprints, blueprint: blueprint}
}

// Register reconciles a blueprint's device plugin when its record
// changes.
func (c *PluginController) Register(m *controller.Manager) error {
	return m.Controller("device-plugin").
		Watches(c.blueprints.Informer(), c.record).
		Complete(c)
}

// record is the name of the blueprint `berth up` started, when obj is
// its record.
func (c *PluginController) record(obj any) []string {
	if cm, ok := obj.(*corev1.ConfigMap); ok && recorded.IsRecord(cm) && cm.Labels[v1alpha1.LabelBlueprint] == c.blueprint {
		return []string{c.blueprint}
	}
	return nil
}

// Reconcile applies the device plugin of the named blueprint's record
// over the DaemonSet berth installed under that name. Applying what is
// already there changes nothing (server-side apply leaves the object and
// its resourceVersion alone), so a record that changed elsewhere costs
// one GET and one no-op apply.
func (c *PluginController) Reconcile(ctx context.Context, name string) (controller.Result, error) {
	bp, err := c.blueprints.Blueprint(name)
	if err != nil || bp == nil || !InstallsDevicePlugin(bp) {
		return controller.Result{}, err
	}
	want := DevicePluginDaemonSet(bp)
	have, err := c.client.AppsV1().DaemonSets(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return controller.Result{}, nil
	case err != nil:
		return controller.Result{}, err
	case !appliedByBerth(have):
		return controller.Result{}, nil
	}
	return controller.Result{}, InstallDevicePlugin(ctx, c.client, bp)
}

// appliedByBerth reports whether berth's field manager applied the
// object.
func appliedByBerth(obj metav1.Object) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == v1alpha1.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
