package karpenter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/crds"
	"berth.io/berth/internal/export"
)

// NodePoolResource and NodeClaimResource are Karpenter's resources.
var (
	NodePoolResource  = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaimResource = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	nodeClassResource = NodeClassGroupVersion.WithResource("ec2nodeclasses")
)

// NodePools are the NodePools `berth export --target karpenter` writes
// for bp, as objects.
func NodePools(bp *v1alpha1.Blueprint) ([]*unstructured.Unstructured, error) {
	var buf bytes.Buffer
	if err := export.Export(&buf, bp, export.Karpenter); err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&buf, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the exported NodePools: %w", err)
		}
		if len(u.Object) > 0 { // the header's comments
			out = append(out, u)
		}
	}
}

// nodeImages is the node class's AnnotationNodeImages: each User pool's
// kubelet version. Karpenter reconciles a NodePool's NodeClaims when its
// node class changes, as when an EC2NodeClass resolves new AMIs; the
// cloud provider's IsDrifted then finds the nodes of the old version.
func nodeImages(bp *v1alpha1.Blueprint) string {
	var out []string
	for i := range bp.Spec.Pools {
		if p := &bp.Spec.Pools[i]; p.Mode != v1alpha1.ModeSystem {
			out = append(out, p.Name+"="+p.KubeletVersion())
		}
	}
	return strings.Join(out, ",")
}

// Install makes the cluster ready for Run: Karpenter's CRDs (CRDs),
// established; a NodeClass for each node class the NodePools refer to;
// and the NodePools `berth export --target karpenter` writes for bp,
// applied as they are (server-side, berth's field manager). `berth
// apply` installs again: the changed NodePools drift, and so do the
// nodes of a pool whose Kubernetes version changed (nodeImages).
func Install(ctx context.Context, cfg *rest.Config, bp *v1alpha1.Blueprint) error {
	classes, pools, err := objects(bp)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := crds.Install(ctx, cfg, "Karpenter's", CRDs(), nil); err != nil {
		return err
	}
	for _, nc := range classes {
		if _, err := dyn.Resource(nodeClassResource).Apply(ctx, nc.GetName(), nc, metav1.ApplyOptions{FieldManager: v1alpha1.FieldManager, Force: true}); err != nil {
			return fmt.Errorf("making the node class %s: %w", nc.GetName(), err)
		}
	}
	for _, np := range pools {
		if _, err := dyn.Resource(NodePoolResource).Apply(ctx, np.GetName(), np, metav1.ApplyOptions{FieldManager: v1alpha1.FieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying NodePool %s: %w", np.GetName(), err)
		}
	}
	return nil
}

// objects are what Install applies for bp beside the CRDs: a node class
// for each the NodePools refer to, carrying the pools' kubelet versions
// (nodeImages), and the NodePools.
func objects(bp *v1alpha1.Blueprint) (classes, pools []*unstructured.Unstructured, err error) {
	if pools, err = NodePools(bp); err != nil {
		return nil, nil, err
	}
	names := map[string]bool{}
	for _, np := range pools {
		name, _, _ := unstructured.NestedString(np.Object, "spec", "template", "spec", "nodeClassRef", "name")
		names[name] = true
	}
	images := nodeImages(bp)
	for _, name := range slices.Sorted(maps.Keys(names)) {
		classes = append(classes, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": NodeClassGroupVersion.String(),
			"kind":       NodeClassKind,
			"metadata": map[string]any{
				"name":        name,
				"annotations": map[string]any{v1alpha1.AnnotationNodeImages: images},
			},
		}})
	}
	return classes, pools, nil
}

// Owned is what `berth plan` and `berth apply` carry for a blueprint with
// provisioner: Karpenter on a local cluster, beside the blueprint's own
// objects: the node classes (a pool's new Kubernetes version is a new
// nodeImages annotation, which drifts its nodes) and the NodePools (a
// NodePool changed by hand shows in the plan, and one that left the
// blueprint is pruned).
func Owned(bp *v1alpha1.Blueprint) ([]apply.Owned, error) {
	classes, pools, err := objects(bp)
	if err != nil {
		return nil, err
	}
	const means = "Karpenter is not installed: start the cluster with provisioner: Karpenter (berth up) to have it provision"
	return []apply.Owned{
		{Kind: compile.Kind{Resource: nodeClassResource, Kind: NodeClassKind}, Objects: classes, Means: means},
		{Kind: compile.Kind{Resource: NodePoolResource, Kind: "NodePool"}, Objects: pools, Means: means},
	}, nil
}
