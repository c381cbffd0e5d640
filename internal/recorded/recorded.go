// Package recorded keeps the blueprints a local cluster was started or
// applied with, each in a ConfigMap in kube-system, so that the
// controllers running inside `berth up` (the node autoscaler, spot
// interruptions, the simulated kubelets) act on the pools, profile and
// device plugin the cluster was last applied with, not the ones it started
// with. It plays the part of a cloud's node-group API.
//
// Write records a blueprint; Decode reads one record; List reads every
// record once, for a command; Store keeps them decoded for the
// controllers, from an informer.
package recorded

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
)

const (
	// ConfigMapPrefix + the blueprint's name is the record's ConfigMap,
	// in kube-system.
	ConfigMapPrefix = "berth-blueprint-"
	// DataKey holds the defaulted blueprint as JSON.
	DataKey = "blueprint.json"
)

// ConfigMapName is the name of the ConfigMap that records blueprint.
func ConfigMapName(blueprint string) string { return ConfigMapPrefix + blueprint }

// IsRecord reports whether cm records a blueprint: it is labelled
// v1alpha1.LabelBlueprint with the blueprint's name and named for it.
// Every reader of the records takes this one test.
func IsRecord(cm *corev1.ConfigMap) bool {
	name, ok := cm.Labels[v1alpha1.LabelBlueprint]
	return ok && cm.Namespace == metav1.NamespaceSystem && cm.Name == ConfigMapName(name)
}

// Write records bp (defaulted) in the cluster for its controllers. A
// record that already says the same is left alone.
func Write(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint) error {
	raw, err := json.Marshal(bp)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ConfigMapName(bp.Metadata.Name),
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{v1alpha1.LabelBlueprint: bp.Metadata.Name},
		},
		Data: map[string]string{DataKey: string(raw)},
	}
	cms := c.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	live, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
	case err == nil && live.Data[DataKey] == cm.Data[DataKey]:
		return nil // an apply that changes nothing writes nothing
	case err == nil:
		cm.ResourceVersion = live.ResourceVersion
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: v1alpha1.FieldManager})
	}
	if err != nil {
		return fmt.Errorf("recording blueprint %s in the cluster: %w", bp.Metadata.Name, err)
	}
	return nil
}

// Decode reads the blueprint a record holds, with its defaults set.
func Decode(cm *corev1.ConfigMap) (*v1alpha1.Blueprint, error) {
	var bp v1alpha1.Blueprint
	if err := json.Unmarshal([]byte(cm.Data[DataKey]), &bp); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	v1alpha1.SetDefaults(&bp)
	return &bp, nil
}

// List reads and decodes every record in the cluster once, for a command
// that runs once (a controller reads a Store): the blueprints, by name. A
// record that does not decode is left out, as if it were not there.
func List(ctx context.Context, c kubernetes.Interface) ([]*v1alpha1.Blueprint, error) {
	list, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelBlueprint})
	if err != nil {
		return nil, fmt.Errorf("reading the recorded blueprints: %w", err)
	}
	var out []*v1alpha1.Blueprint
	for i := range list.Items {
		cm := &list.Items[i]
		if !IsRecord(cm) {
			continue
		}
		if bp, err := Decode(cm); err == nil {
			out = append(out, bp)
		}
	}
	byName(out)
	return out, nil
}

func byName(bps []*v1alpha1.Blueprint) {
	sort.Slice(bps, func(i, j int) bool { return bps[i].Metadata.Name < bps[j].Metadata.Name })
}
