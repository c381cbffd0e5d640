package pools

import (
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

// PoolLabels name a node's pool: berth's own, then those AKS, EKS, GKE
// and Karpenter set. Audit and why group any cluster's nodes by them.
var PoolLabels = []string{
	v1alpha1.LabelPool,
	v1alpha1.LabelAgentPool,
	v1alpha1.LabelAKSAgentPool,
	v1alpha1.LabelEKSNodeGroup,
	v1alpha1.LabelGKENodePool,
	v1alpha1.LabelKarpenterNodePool,
}

// PoolOf is the pool a node belongs to by the first of PoolLabels it
// carries, or "" when it carries none.
func PoolOf(n *corev1.Node) string {
	for _, l := range PoolLabels {
		if v := n.Labels[l]; v != "" {
			return v
		}
	}
	return ""
}
