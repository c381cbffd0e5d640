package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/slim"
)

// kubelet plays the parts of the kubelet KWOK leaves out, for every pool
// node:
//
//   - its device manager: a node's devices (its GPUs, listed in
//     v1alpha1.AnnotationDevices) are in its capacity only while a Running
//     pod of the device plugin's DaemonSet is on it, as a real node's
//     GPUs are only while the NVIDIA device plugin has registered them;
//   - allocatable follows capacity, less what the node reserves. When a
//     client changes a node's capacity, as a device plugin does when it
//     advertises GPUs, allocatable follows, and the scheduler sees it.
//
// It watches nodes and the plugin's pods and reconciles one node at a
// time from a queue.
type kubelet struct {
	client kubernetes.Interface
	plugin v1alpha1.DevicePlugin
	nodes  corelisters.NodeLister
	pods   cache.Indexer
	queue  workqueue.TypedRateLimitingInterface[string]
}

// podsByNode indexes the plugin namespace's pods by spec.nodeName.
const podsByNode = "nodeName"

// runKubelet runs the kubelet's parts until ctx ends. plugin names the
// device plugin's DaemonSet; nil means the defaults.
func runKubelet(ctx context.Context, c kubernetes.Interface, plugin *v1alpha1.DevicePlugin) error {
	k := &kubelet{
		client: c,
		plugin: v1alpha1.DevicePlugin{Namespace: v1alpha1.DefaultDevicePluginNamespace, Name: v1alpha1.DefaultDevicePluginName},
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	defer k.queue.ShutDown()
	if plugin != nil && plugin.Name != "" {
		k.plugin = *plugin
	}
	nodeFactory := slim.Informers(c, 10*time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.LabelPool }))
	podFactory := informers.NewSharedInformerFactoryWithOptions(c, 10*time.Minute, informers.WithNamespace(k.plugin.Namespace))
	nodes := nodeFactory.Core().V1().Nodes()
	pods := podFactory.Core().V1().Pods().Informer()
	if err := pods.AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	k.nodes, k.pods = nodes.Lister(), pods.GetIndexer()
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.enqueueNode,
		UpdateFunc: func(_, obj any) { k.enqueueNode(obj) },
	}); err != nil {
		return err
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.enqueuePod,
		UpdateFunc: func(_, obj any) { k.enqueuePod(obj) },
		DeleteFunc: k.enqueuePod,
	}); err != nil {
		return err
	}
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	nodeFactory.WaitForCacheSync(ctx.Done())
	podFactory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		k.queue.ShutDown()
	}()
	for k.next(ctx) {
	}
	nodeFactory.Shutdown()
	podFactory.Shutdown()
	return nil
}

func (k *kubelet) enqueueNode(obj any) {
	if n, ok := obj.(*corev1.Node); ok {
		k.queue.Add(n.Name)
	}
}

// enqueuePod queues the node of a plugin pod that appeared, changed or
// went.
func (k *kubelet) enqueuePod(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok && k.isPlugin(p) && p.Spec.NodeName != "" {
		k.queue.Add(p.Spec.NodeName)
	}
}

// isPlugin reports whether the DaemonSet controller made p for the
// device plugin.
func (k *kubelet) isPlugin(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "DaemonSet" && ref.Name == k.plugin.Name && p.Namespace == k.plugin.Namespace
}

func (k *kubelet) next(ctx context.Context) bool {
	name, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(name)
	if err := k.sync(ctx, name); err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "updating node status", "node", name)
			k.queue.AddRateLimited(name)
		}
		return true
	}
	k.queue.Forget(name)
	return true
}

// pluginRunning reports whether a Running plugin pod, not being deleted,
// is on the node.
func (k *kubelet) pluginRunning(node string) bool {
	objs, _ := k.pods.ByIndex(podsByNode, node)
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		if k.isPlugin(p) && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

func (k *kubelet) sync(ctx context.Context, name string) error {
	n, err := k.nodes.Get(name)
	if err != nil {
		return nil // deleted: nothing to report for it
	}
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
	running := len(devices) > 0 && k.pluginRunning(n.Name)
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
	_, err = k.client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
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
