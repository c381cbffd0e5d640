// Package storage binds claims on the local cluster as a cloud's CSI
// driver does. Each of the blueprint's storage classes (spec.storage) is
// a StorageClass whose provisioner is a driver of berth's,
// CLASS.storage.berth.io, with a CSIDriver that needs no attach (the
// simulated kubelets mount nothing); Provisioner makes a
// PersistentVolume for each claim of such a class, with
// sig-storage-lib-external-provisioner's controller, the library the
// Kubernetes CSI sidecars stand on. The real PV controller binds, and the
// scheduler's volume plugins decide placement: a zonal class binds
// WaitForFirstConsumer, and its volume is pinned to the zone of the node
// the scheduler chose.
//
// The classes are planned and applied as the blueprint's own objects,
// on a berth local cluster only (Owned): elsewhere the cloud's CSI
// drivers and `berth export`'s classes serve.
package storage

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	storageutil "k8s.io/kubernetes/pkg/apis/storage/util"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/compile"
)

// DriverSuffix ends the name of every driver of berth's: a class's
// driver is CLASS + DriverSuffix.
const DriverSuffix = ".storage.berth.io"

// Driver is the provisioner and CSI driver name of a class.
func Driver(class string) string { return class + DriverSuffix }

// The StorageClass parameters Provisioner reads.
const (
	paramAccessModes      = "accessModes"
	paramProvisioningTime = "provisioningTime"
	paramMinSize          = "minSize"
	paramMaxSize          = "maxSize"
	paramZonal            = "zonal"
	// paramMaxVolumesPerNode is read by the CSINode publisher.
	paramMaxVolumesPerNode = "maxVolumesPerNode"
)

// Objects are the blueprint's classes as the local cluster holds them: a
// StorageClass and a CSIDriver each. bp must be defaulted.
func Objects(bp *v1alpha1.Blueprint) (classes, drivers []runtime.Object) {
	if bp.Spec.Storage == nil {
		return nil, nil
	}
	for i := range bp.Spec.Storage.Classes {
		c := &bp.Spec.Storage.Classes[i]
		meta := metav1.ObjectMeta{Name: c.Name, Labels: compile.Labels(bp)}
		if c.Default {
			meta.Annotations = map[string]string{storageutil.IsDefaultStorageClassAnnotation: "true"}
		}
		binding := storagev1.VolumeBindingImmediate
		if c.IsZonal() {
			binding = storagev1.VolumeBindingWaitForFirstConsumer
		}
		reclaim := c.ReclaimPolicy
		params := map[string]string{
			paramAccessModes:      modes(c.AccessModes),
			paramProvisioningTime: c.ProvisioningDuration().String(),
			paramZonal:            strconv.FormatBool(c.IsZonal()),
		}
		if c.MinSize != nil {
			params[paramMinSize] = c.MinSize.String()
		}
		if c.MaxSize != nil {
			params[paramMaxSize] = c.MaxSize.String()
		}
		if c.MaxVolumesPerNode > 0 {
			params[paramMaxVolumesPerNode] = strconv.Itoa(int(c.MaxVolumesPerNode))
		}
		classes = append(classes, &storagev1.StorageClass{
			TypeMeta:          metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
			ObjectMeta:        meta,
			Provisioner:       Driver(c.Name),
			Parameters:        params,
			ReclaimPolicy:     &reclaim,
			VolumeBindingMode: &binding,
		})
		drivers = append(drivers, &storagev1.CSIDriver{
			TypeMeta:   metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"},
			ObjectMeta: metav1.ObjectMeta{Name: Driver(c.Name), Labels: compile.Labels(bp)},
			Spec: storagev1.CSIDriverSpec{
				// Nothing to attach: without this the attach/detach
				// controller would wait on a VolumeAttachment no
				// attacher ever answers.
				AttachRequired: ptr.To(false),
				PodInfoOnMount: ptr.To(false),
			},
		})
	}
	return classes, drivers
}

// Owned are Objects for apply's plan: planned, applied and pruned on a
// berth local cluster only.
func Owned(bp *v1alpha1.Blueprint) ([]apply.Owned, error) {
	classes, drivers := Objects(bp)
	toU := func(objs []runtime.Object) ([]*unstructured.Unstructured, error) {
		var out []*unstructured.Unstructured
		for _, o := range objs {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return nil, err
			}
			out = append(out, &unstructured.Unstructured{Object: m})
		}
		return out, nil
	}
	cs, err := toU(classes)
	if err != nil {
		return nil, err
	}
	ds, err := toU(drivers)
	if err != nil {
		return nil, err
	}
	// Blueprints sharing a cluster share its storage classes: a class
	// another blueprint made (every blueprint has standard by default)
	// stays that blueprint's.
	const means = "claims of the blueprint's classes are not provisioned"
	return []apply.Owned{
		{Kind: compile.Kind{Resource: storagev1.SchemeGroupVersion.WithResource("csidrivers"), Kind: "CSIDriver"}, Objects: ds, Means: means, Shared: true},
		{Kind: compile.Kind{Resource: storagev1.SchemeGroupVersion.WithResource("storageclasses"), Kind: "StorageClass"}, Objects: cs, Means: means, Shared: true},
	}, nil
}

func modes(ms []corev1.PersistentVolumeAccessMode) string {
	out := ""
	for i, m := range ms {
		if i > 0 {
			out += ","
		}
		out += string(m)
	}
	return out
}
