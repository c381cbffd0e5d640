package export

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
)

// writeManifests writes the objects compile.Objects makes, in the order
// they must be applied, as kubectl would print them minus what Go's types
// always serialise and a manifest should not hold (creationTimestamp:
// null, status).
func writeManifests(w io.Writer, bp *v1alpha1.Blueprint) error {
	objs := compile.Objects(bp)
	head := append(header(bp, Manifests), "",
		"The Kubernetes objects berth compiles from the blueprint (team namespaces with their classes' budgets, quotas and LimitRanges, class PriorityClasses, and the guardrails' admission policies), in the order to apply them. Node pools are not objects: export them with --target aks, eks, gke or karpenter.")
	if bp.Spec.UsesKueue() {
		head = append(head, "", "The blueprint queues with Kueue: the objects include Kueue's (a ResourceFlavor per GPU pool, a ClusterQueue per team in cohort "+bp.Metadata.Name+", a LocalQueue per team namespace, a WorkloadPriorityClass per class), written for Kueue "+v1alpha1.KueueVersion+", which must be installed first.")
	}
	if len(objs) == 0 {
		head = append(head, "", "This blueprint has no teams or classes, so it compiles to no objects.")
	}
	writeComment(w, "", head...)
	for _, obj := range objs {
		data, err := manifest(obj)
		if err != nil {
			return fmt.Errorf("writing %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
		fmt.Fprintln(w, "---")
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return writeScalingTemplates(w, bp)
}

// manifest is one object as YAML without its status, null
// creationTimestamp or empty spec.
func manifest(obj compile.Object) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	// Status belongs to the cluster; a GitOps manifest never carries it.
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(m, "spec")
	}
	return yaml.Marshal(m)
}
