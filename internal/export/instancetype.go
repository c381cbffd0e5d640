package export

import (
	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// InstanceType is the instance type pool i of bp gets in target's
// artifacts (Karpenter's are EKS's): the one machine.instanceTypes names,
// else the catalog's smallest fit, as Export chooses it. Its error is the
// problem Export would report for the pool. bp must be defaulted and
// valid; Manifests have no instance types.
func InstanceType(bp *v1alpha1.Blueprint, i int, target Target) (string, error) {
	c, ok := map[Target]cloud{AKS: azure, EKS: aws, Karpenter: aws, GKE: gcp}[target]
	if !ok {
		return "", problem.Errorf("use aks, eks, karpenter or gke", "export target %q has no instance types", target)
	}
	m, prob := resolveMachine(i, &bp.Spec.Pools[i], c)
	if prob != nil {
		return "", prob
	}
	return m.Type, nil
}
