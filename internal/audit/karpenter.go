package audit

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool is what audit reads of a Karpenter NodePool (karpenter.sh/v1):
// the nodes it would make. A manifest set holds pools this way, rather
// than as Nodes, so the pool rules check the template.
type NodePool struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels,omitempty"`
			} `json:"metadata"`
			Spec struct {
				Taints       []corev1.Taint                   `json:"taints,omitempty"`
				Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
			} `json:"spec"`
		} `json:"template"`
		Limits corev1.ResourceList `json:"limits,omitempty"`
	} `json:"spec"`
}

// templateNode is a node as the NodePool would make it: its template's
// labels and taints, requirements that allow one value as labels, and
// the GPUs its limits or requirements say it has.
func (np *NodePool) templateNode() *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: np.Name, Labels: map[string]string{"karpenter.sh/nodepool": np.Name}}}
	for k, v := range np.Spec.Template.Metadata.Labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = np.Spec.Template.Spec.Taints
	gpu := false
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			n.Labels[r.Key] = r.Values[0]
		}
		if strings.Contains(r.Key, "gpu") && r.Operator != corev1.NodeSelectorOpDoesNotExist && r.Operator != corev1.NodeSelectorOpNotIn && !(r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == "0") {
			gpu = true
		}
	}
	for r, q := range np.Spec.Limits {
		if isGPUResource(r) && !q.IsZero() {
			gpu = true
		}
	}
	if gpu {
		n.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")} // at least one
	}
	return n
}
