package export

import (
	"testing"

	"berth.io/berth/internal/blueprint"
)

// The types InstanceType gives are the ones the artifacts name: the
// retail template's, pool by pool, as docs/reference/instance-types.md and
// docs/reference/prices.md give them.
func TestInstanceType(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	want := map[Target][]string{
		EKS:       {"m6i.xlarge", "m6i.4xlarge", "g6.8xlarge", "g6.8xlarge"},
		Karpenter: {"m6i.xlarge", "m6i.4xlarge", "g6.8xlarge", "g6.8xlarge"},
		AKS:       {"Standard_D4s_v5", "Standard_D16s_v5", "Standard_NC24ads_A100_v4", "Standard_NC24ads_A100_v4"},
		GKE:       {"e2-standard-4", "n2-standard-16", "g2-standard-32", "g2-standard-32"},
	}
	for target, types := range want {
		for i, w := range types {
			got, err := InstanceType(bp, i, target)
			if err != nil || got != w {
				t.Errorf("%s pool %s: %q, %v; want %q", target, bp.Spec.Pools[i].Name, got, err, w)
			}
		}
	}
	if _, err := InstanceType(bp, 0, Manifests); err == nil {
		t.Error("manifests gave an instance type")
	}
}
