package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/kubelets"
	"berth.io/berth/internal/pools"
)

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
	if !kubelets.InstallsDevicePlugin(bp) {
		return nil
	}
	ds := kubelets.DevicePluginDaemonSet(bp)
	// The ServiceAccount admission plugin refuses pods until their
	// namespace's default ServiceAccount exists, and the DaemonSet
	// controller backs off after each refusal.
	if err := c.waitFor(ctx, "the default ServiceAccount in "+ds.Namespace, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ds.Namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return err
	}
	if err := kubelets.InstallDevicePlugin(ctx, client, bp); err != nil {
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
