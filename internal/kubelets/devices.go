package kubelets

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/slim"
)

// Controller plays the parts of the kubelet KWOK leaves out, for every
// pool node:
//
//   - its device manager: a node's devices (its GPUs, listed in
//     v1alpha1.AnnotationDevices) are in its capacity only while a Running
//     pod of the device plugin's DaemonSet is on it, as a real node's
//     GPUs are only while the NVIDIA device plugin has registered them;
//   - allocatable follows capacity, less what the node reserves. When a
//     client changes a node's capacity, as a device plugin does when it
//     advertises GPUs, allocatable follows, and the scheduler sees it.
//
// The device plugin is the one the node's blueprint names as the cluster
// last recorded it (package recorded), so a `berth apply` that names
// another reaches running nodes. It reconciles one node at a time, when
// the node, a DaemonSet's pod on it, or its blueprint's record changes.
type Controller struct {
	client     kubernetes.Interface
	nodes      cache.SharedIndexInformer
	pods       cache.SharedIndexInformer
	blueprints *recorded.Store
	// err is a failure to set the informers up, returned by Register.
	err error
}

// NewController returns the kubelets' controller. It writes node status
// through client (a real fleet has a client per kubelet: give it one
// that is not rate-limited). It takes the cluster's nodes and pods from
// factory and the recorded blueprints from blueprints, both shared with
// berth's other controllers and started by their owner.
func NewController(client kubernetes.Interface, factory informers.SharedInformerFactory, blueprints *recorded.Store) *Controller {
	c := &Controller{
		client:     client,
		nodes:      factory.Core().V1().Nodes().Informer(),
		pods:       factory.Core().V1().Pods().Informer(),
		blueprints: blueprints,
	}
	c.err = slim.IndexPodsByNode(c.pods)
	return c
}

// Register reconciles each pool node when it changes, when a DaemonSet's
// pod on it does, and when its blueprint's record does.
func (c *Controller) Register(m *controller.Manager) error {
	if c.err != nil {
		return c.err
	}
	return m.Controller("kubelet").
		Watches(c.nodes, poolNode).
		Watches(c.pods, daemonNode).
		Watches(c.blueprints.Informer(), c.devicesOf).
		Complete(c)
}

// poolNode is the key of a node of a pool.
func poolNode(obj any) []string {
	if n, ok := obj.(*corev1.Node); ok {
		if _, ok := n.Labels[v1alpha1.LabelPool]; ok {
			return []string{n.Name}
		}
	}
	return nil
}

// daemonNode is the node of a DaemonSet's pod that appeared, changed or
// went. Whether that DaemonSet is the device plugin depends on the node's
// blueprint, which Reconcile reads.
func daemonNode(obj any) []string {
	if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
			return []string{p.Spec.NodeName}
		}
	}
	return nil
}

// devicesOf are the pool nodes with devices of the blueprint a record
// holds: its device plugin may have changed.
func (c *Controller) devicesOf(obj any) []string {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || !recorded.IsRecord(cm) {
		return nil
	}
	var out []string
	for _, o := range c.nodes.GetStore().List() {
		n := o.(*corev1.Node)
		if n.Labels[v1alpha1.LabelBlueprint] == cm.Labels[v1alpha1.LabelBlueprint] && n.Annotations[v1alpha1.AnnotationDevices] != "" {
			out = append(out, poolNode(n)...)
		}
	}
	return out
}

// plugin is the device plugin of the node's blueprint, as last recorded;
// the defaults for a node of no recorded blueprint.
func (c *Controller) plugin(n *corev1.Node) (v1alpha1.DevicePlugin, error) {
	bp, err := c.blueprints.Blueprint(n.Labels[v1alpha1.LabelBlueprint])
	switch {
	case err != nil:
		return v1alpha1.DevicePlugin{}, err
	case bp != nil && bp.Spec.DevicePlugin != nil:
		return *bp.Spec.DevicePlugin, nil // defaulted: named
	}
	return v1alpha1.DevicePlugin{Namespace: v1alpha1.DefaultDevicePluginNamespace, Name: v1alpha1.DefaultDevicePluginName}, nil
}

// pluginRunning reports whether a Running pod of plugin, not being
// deleted, is on the node.
func (c *Controller) pluginRunning(node string, plugin v1alpha1.DevicePlugin) bool {
	objs, _ := c.pods.GetIndexer().ByIndex(slim.PodsByNode, node)
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		ref := metav1.GetControllerOf(p)
		if ref != nil && ref.Kind == "DaemonSet" && ref.Name == plugin.Name && p.Namespace == plugin.Namespace &&
			p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// Reconcile brings the node's capacity and allocatable up to date.
func (c *Controller) Reconcile(ctx context.Context, name string) (controller.Result, error) {
	if err := c.sync(ctx, name); err != nil {
		return controller.Result{}, fmt.Errorf("updating node %s's status: %w", name, err)
	}
	return controller.Result{}, nil
}

func (c *Controller) sync(ctx context.Context, name string) error {
	obj, ok, err := c.nodes.GetStore().GetByKey(name)
	if err != nil || !ok {
		return err // deleted: nothing to report for it
	}
	n := obj.(*corev1.Node)
	devices, err := pools.ParseResources(n.Annotations[v1alpha1.AnnotationDevices])
	if err != nil {
		return fmt.Errorf("annotation %s: %w", v1alpha1.AnnotationDevices, err)
	}
	reserved, err := pools.ParseResources(n.Annotations[v1alpha1.AnnotationSystemReserved])
	if err != nil {
		return fmt.Errorf("annotation %s: %w", v1alpha1.AnnotationSystemReserved, err)
	}
	capacity := n.Status.Capacity.DeepCopy()
	if capacity == nil {
		capacity = corev1.ResourceList{}
	}
	running := false
	if len(devices) > 0 {
		plugin, err := c.plugin(n)
		if err != nil {
			return err
		}
		running = c.pluginRunning(n.Name, plugin)
	}
	for r, q := range devices {
		_, advertised := capacity[r]
		switch {
		case running:
			capacity[r] = q.DeepCopy()
		case advertised:
			// The plugin went. The kubelet's device manager marks the
			// plugin's devices unhealthy at once (allocatable 0), keeps
			// them in capacity for a grace period of five minutes, and
			// then sets capacity to 0, keeping the resource to show that
			// a plugin managed it. berth goes to 0 at once: the scheduler
			// reads only allocatable, so it stops placing pods there at
			// the same moment. A plugin counts as registered while its
			// pod is Running; one that runs but cannot register (no
			// driver on the machine) is not simulated.
			capacity[r] = resource.Quantity{Format: resource.DecimalSI}
		}
	}
	allocatable := pools.Allocatable(capacity, reserved)
	if apiequality.Semantic.DeepEqual(capacity, n.Status.Capacity) && apiequality.Semantic.DeepEqual(allocatable, n.Status.Allocatable) {
		return nil
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{
		"capacity":    listPatch(n.Status.Capacity, capacity),
		"allocatable": listPatch(n.Status.Allocatable, allocatable),
	}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}

// listPatch is the merge patch that turns have into want.
func listPatch(have, want corev1.ResourceList) map[string]any {
	patch := map[string]any{}
	for name, q := range want {
		patch[string(name)] = q.String()
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			patch[string(name)] = nil
		}
	}
	return patch
}
