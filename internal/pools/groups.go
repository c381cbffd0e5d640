package pools

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

// A local cluster keeps each blueprint it was started or applied with in
// a ConfigMap in kube-system, so that the controllers running inside
// `berth up` (the node autoscaler first) act on the pools and profile the
// cluster was last applied with, not the ones it started with. It plays
// the part of a cloud's node-group API.
const (
	// BlueprintConfigMapPrefix + the blueprint's name is the ConfigMap.
	BlueprintConfigMapPrefix = "berth-blueprint-"
	// BlueprintKey holds the defaulted blueprint as JSON.
	BlueprintKey = "blueprint.json"
)

// StoreBlueprint records bp (defaulted) in the cluster for its
// controllers.
func StoreBlueprint(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint) error {
	raw, err := json.Marshal(bp)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      BlueprintConfigMapPrefix + bp.Metadata.Name,
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{v1alpha1.LabelBlueprint: bp.Metadata.Name},
		},
		Data: map[string]string{BlueprintKey: string(raw)},
	}
	cms := c.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	live, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
	case err == nil && live.Data[BlueprintKey] == cm.Data[BlueprintKey]:
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

// BlueprintFrom reads a blueprint StoreBlueprint recorded.
func BlueprintFrom(cm *corev1.ConfigMap) (*v1alpha1.Blueprint, error) {
	var bp v1alpha1.Blueprint
	if err := json.Unmarshal([]byte(cm.Data[BlueprintKey]), &bp); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	v1alpha1.SetDefaults(&bp)
	return &bp, nil
}

// NextNodes are the n nodes a pool adds next, given its live nodes: of
// the pool's newest generation, at the lowest free indexes, so that a
// pool that shrank from the middle fills its gaps first. Zones follow
// the index, round-robin, as for every pool node.
func NextNodes(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, live []*corev1.Node, n int) []*corev1.Node {
	return nextNodes(bp, p, generation(live), live, n)
}

func nextNodes(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, gen int, live []*corev1.Node, n int) []*corev1.Node {
	used := map[int]bool{}
	for _, node := range live {
		if nodeGeneration(node) == gen {
			used[nodeIndex(node)] = true
		}
	}
	var out []*corev1.Node
	for i := 0; len(out) < n; i++ {
		if !used[i] {
			out = append(out, newNode(bp, p, gen, i))
		}
	}
	return out
}

// NodesOf returns the nodes of pool among nodes, by name.
func NodesOf(pool string, nodes []*corev1.Node) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if n.Labels[v1alpha1.LabelPool] == pool {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
