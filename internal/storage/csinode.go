package storage

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthcontroller "berth.io/berth/internal/controller"
)

// A node's CSINode is what a kubelet publishes of the CSI drivers
// registered on it: the scheduler's NodeVolumeLimits plugin reads each
// driver's allocatable count there. The simulated kubelets register
// berth's drivers, so this controller publishes them: each pool node
// gets every berth class's driver, its count the class's
// maxVolumesPerNode (none when the class sets no limit), its topology
// the node's zone.

// Reconcile makes one node's CSINode list berth's drivers.
func (c *Controller) Reconcile(ctx context.Context, name string) (berthcontroller.Result, error) {
	obj, ok, err := c.nodes.GetIndexer().GetByKey(name)
	if err != nil || !ok {
		return berthcontroller.Result{}, err // the node went: its CSINode goes with it (owner reference)
	}
	node := obj.(*corev1.Node)
	var classes []*storagev1.StorageClass
	for _, o := range c.classes.GetIndexer().List() {
		classes = append(classes, o.(*storagev1.StorageClass))
	}
	want := drivers(node, classes)
	live, err := c.client.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if len(want) == 0 {
			return berthcontroller.Result{}, nil
		}
		_, err = c.client.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}},
			Spec:       storagev1.CSINodeSpec{Drivers: want},
		}, metav1.CreateOptions{})
	case err != nil:
	default:
		// Drivers not berth's (a real kubelet's) stay as they are.
		others := slices.DeleteFunc(slices.Clone(live.Spec.Drivers), func(d storagev1.CSINodeDriver) bool { return strings.HasSuffix(d.Name, DriverSuffix) })
		next := append(others, want...)
		if apiequality.Semantic.DeepEqual(next, live.Spec.Drivers) {
			return berthcontroller.Result{}, nil
		}
		live.Spec.Drivers = next
		_, err = c.client.StorageV1().CSINodes().Update(ctx, live, metav1.UpdateOptions{})
	}
	if err != nil {
		return berthcontroller.Result{}, fmt.Errorf("publishing node %s's storage drivers: %w", name, err)
	}
	return berthcontroller.Result{}, nil
}

// drivers are berth's drivers as node registers them, by name.
func drivers(node *corev1.Node, classes []*storagev1.StorageClass) []storagev1.CSINodeDriver {
	var out []storagev1.CSINodeDriver
	seen := map[string]bool{}
	for _, sc := range classes {
		if !strings.HasSuffix(sc.Provisioner, DriverSuffix) || seen[sc.Provisioner] {
			continue
		}
		seen[sc.Provisioner] = true
		d := storagev1.CSINodeDriver{Name: sc.Provisioner, NodeID: node.Name, TopologyKeys: []string{corev1.LabelTopologyZone}}
		if n, err := strconv.Atoi(sc.Parameters[paramMaxVolumesPerNode]); err == nil && n > 0 {
			d.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(n))}
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b storagev1.CSINodeDriver) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// allNodes are the keys of every node: a class's change reaches each.
func (c *Controller) allNodes(any) []string {
	return c.nodes.GetIndexer().ListKeys()
}

// zoneChanged is true of a node update that changes what its CSINode
// says: its zone. Nodes update their status often (heartbeats,
// allocatable), and each reconcile reads the CSINode from the API.
func zoneChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	return !ok1 || !ok2 || o.Labels[corev1.LabelTopologyZone] != n.Labels[corev1.LabelTopologyZone]
}

// nodeKey is a node's own key.
func nodeKey(obj any) []string {
	if n, ok := obj.(*corev1.Node); ok {
		return []string{n.Name}
	}
	return nil
}
