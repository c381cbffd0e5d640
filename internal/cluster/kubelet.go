package cluster

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"berth.io/berth/internal/pools"
)

// runAllocatable plays the one part of the kubelet KWOK leaves out: a
// node's allocatable follows its capacity, less what the node reserves.
// When a client changes a node's capacity, as a device plugin does when it
// advertises GPUs, allocatable follows, and the scheduler sees it.
func runAllocatable(ctx context.Context, c kubernetes.Interface) {
	factory := informers.NewSharedInformerFactoryWithOptions(c, 10*time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = pools.LabelPool }))
	nodes := factory.Core().V1().Nodes().Informer()
	sync := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		if err := syncAllocatable(ctx, c, n); err != nil {
			klog.FromContext(ctx).Error(err, "updating allocatable", "node", n.Name)
		}
	}
	nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    sync,
		UpdateFunc: func(_, obj any) { sync(obj) },
	})
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

func syncAllocatable(ctx context.Context, c kubernetes.Interface, n *corev1.Node) error {
	reserved, err := pools.ParseResources(n.Annotations[pools.AnnotationReserved])
	if err != nil {
		return err
	}
	want := pools.Allocatable(n.Status.Capacity, reserved)
	if apiequality.Semantic.DeepEqual(want, n.Status.Allocatable) {
		return nil
	}
	patch := map[string]any{}
	for name, q := range want {
		patch[string(name)] = q.String()
	}
	for name := range n.Status.Allocatable {
		if _, ok := want[name]; !ok {
			patch[string(name)] = nil
		}
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"allocatable": patch}})
	if err != nil {
		return err
	}
	_, err = c.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}
