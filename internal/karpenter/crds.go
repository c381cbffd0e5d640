package karpenter

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/karpenter/pkg/apis"
)

// karpenterCRDs are copies of the CRDs of the Karpenter module berth is
// built with.
func karpenterCRDs() []*apiextensionsv1.CustomResourceDefinition {
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(apis.CRDs))
	for i, c := range apis.CRDs {
		out[i] = c.DeepCopy()
	}
	return out
}
