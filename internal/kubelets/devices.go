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
// It reconciles one node at a time, when the node or a pod of the plugin
// on it changes.
type Controller struct {
	client kubernetes.Interface
	plugin v1alpha1.DevicePlugin
	nodes  cache.SharedIndexInformer
	pods   cache.SharedIndexInformer
	// err is a failure to set the informers up, returned by Register.
	err error
}

// NewController returns the kubelets' controller. It writes node status
// through client (a real fleet has a client per kubelet: give it one
// that is not rate-limited), and takes the cluster's nodes and pods from
// factory, shared with berth's other controllers and started by its
// owner. plugin names the device plugin's DaemonSet; nil means the
// defaults.
func NewController(client kubernetes.Interface, factory informers.SharedInformerFactory, plugin *v1alpha1.DevicePlugin) *Controller {
	c := &Controller{
		client: client,
		plugin: v1alpha1.DevicePlugin{Namespace: v1alpha1.DefaultDevicePluginNamespace, Name: v1alpha1.DefaultDevicePluginName},
		nodes:  factory.Core().V1().Nodes().Informer(),
		pods:   factory.Core().V1().Pods().Informer(),
	}
	if plugin != nil && plugin.Name != "" {
		c.plugin = *plugin
	}
	c.err = slim.IndexPodsByNode(c.pods)
	return c
}

// Register reconciles each pool node when it changes, and when a pod of
// the device plugin on it does.
func (c *Controller) Register(m *controller.Manager) error {
	if c.err != nil {
		return c.err
	}
	return m.Controller("kubelet").
		Watches(c.nodes, poolNode).
		Watches(c.pods, c.pluginNode).
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

// pluginNode is the node of a plugin pod that appeared, changed or went.
func (c *Controller) pluginNode(obj any) []string {
	if p, ok := obj.(*corev1.Pod); ok && c.isPlugin(p) && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}
	}
	return nil
}

// isPlugin reports whether the DaemonSet controller made p for the
// device plugin.
func (c *Controller) isPlugin(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "DaemonSet" && ref.Name == c.plugin.Name && p.Namespace == c.plugin.Namespace
}

// pluginRunning reports whether a Running plugin pod, not being deleted,
// is on the node.
func (c *Controller) pluginRunning(node string) bool {
	objs, _ := c.pods.GetIndexer().ByIndex(slim.PodsByNode, node)
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		if c.isPlugin(p) && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
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
	running := len(devices) > 0 && c.pluginRunning(n.Name)
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
