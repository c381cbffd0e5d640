package export

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
)

func TestGKERules(t *testing.T) {
	tests := []struct {
		name   string
		change func(bp *v1alpha1.Blueprint)
		want   []wantProblem
	}{{
		name:   "too many pods per node",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[1].MaxPods = 300 },
		want:   []wantProblem{{"work", "spec.pools[1].maxPods", "8 to 256 pods", "between 8 and 256"}},
	}, {
		name: "two taints with one key",
		change: func(bp *v1alpha1.Blueprint) {
			bp.Spec.Pools[1].Taints = []v1alpha1.Taint{v1alpha1.MustParseTaint("gpu=true:NoSchedule"), v1alpha1.MustParseTaint("gpu=true:NoExecute")}
		},
		want: []wantProblem{{"work", "spec.pools[1].taints[1]", `one taint per key, and key "gpu" has two`, "one taint per key"}},
	}, {
		name: "GPUs on Windows",
		change: func(bp *v1alpha1.Blueprint) {
			bp.Spec.Pools[1].OS = v1alpha1.Windows
			bp.Spec.Pools[1].Machine = v1alpha1.Machine{CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi"), GPU: &v1alpha1.GPU{Count: 1, Product: "NVIDIA-L4"}}
		},
		want: []wantProblem{{"work", "spec.pools[1].machine.gpu", "GPUs on Linux nodes only", "os: Linux"}},
	}, {
		name:   "name too long",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[1].Name = strings.Repeat("a", 41) },
		want:   []wantProblem{{strings.Repeat("a", 41), "spec.pools[1].name", "up to 40", "rename the pool"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bp := loadBlueprint(t, base)
			tt.change(bp)
			checkProblems(t, problemsOf(t, bp, GKE), tt.want)
		})
	}
}

func TestGKEPerZoneCounts(t *testing.T) {
	bp := loadBlueprint(t, base)
	bp.Spec.Pools[0].Count = ptr.To[int32](4) // two zones: two each
	out := export(t, bp, GKE)
	if !strings.Contains(out, "--num-nodes 2 \\\n") || strings.Contains(out, "do not spread evenly") {
		t.Errorf("4 nodes over 2 zones:\n%s", out)
	}
	bp.Spec.Pools[0].Count = ptr.To[int32](3)
	out = flat(export(t, bp, GKE))
	if !strings.Contains(out, "3 nodes do not spread evenly over 2 zones: 2 in each gives the pool 4 nodes, not 3.") {
		t.Errorf("3 nodes over 2 zones has no note:\n%s", out)
	}
}

func TestGKEZones(t *testing.T) {
	bp := loadBlueprint(t, base)
	bp.Spec.Zones = []string{"europe-west4-a", "europe-west4-b"}
	for i := range bp.Spec.Pools {
		bp.Spec.Pools[i].Zones = bp.Spec.Zones
	}
	out := export(t, bp, GKE)
	for _, want := range []string{`LOCATION="${LOCATION:-europe-west4}"`, "--node-locations europe-west4-a,europe-west4-b \\\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %q:\n%s", want, out)
		}
	}
}

func TestEKSRules(t *testing.T) {
	bp := loadBlueprint(t, base)
	bp.Spec.Pools[1].Name = "1st"
	bp.Spec.Pools[1].Taints = []v1alpha1.Taint{v1alpha1.MustParseTaint("example.com/" + strings.Repeat("k", 60) + "=v:NoSchedule")}
	checkProblems(t, problemsOf(t, bp, EKS), []wantProblem{
		{"1st", "spec.pools[1].name", "starting with a letter", "rename the pool"},
		{"1st", "spec.pools[1].taints[0]", "at most 63 characters", "shorter key"},
	})
}

func TestEKSRegion(t *testing.T) {
	tests := []struct {
		zones  []string
		region string
	}{
		{[]string{"eu-west-1a", "eu-west-1b"}, "region: eu-west-1\n"},
		{[]string{"us-west-2-lax-1a", "us-west-2a"}, "region: us-west-2\n"},
		{[]string{"us-east-1a", "us-west-2a"}, "region: REGION # set your AWS region"},
		{[]string{"zone-1", "zone-2"}, "region: REGION # set your AWS region"},
	}
	for _, tt := range tests {
		bp := loadBlueprint(t, base)
		bp.Spec.Zones = tt.zones
		for i := range bp.Spec.Pools {
			bp.Spec.Pools[i].Zones = tt.zones
		}
		if out := export(t, bp, EKS); !strings.Contains(out, tt.region) {
			t.Errorf("zones %v: export lacks %q:\n%s", tt.zones, tt.region, out)
		}
	}
}

func TestKarpenterLimits(t *testing.T) {
	bp := loadBlueprint(t, base)
	// A type the catalog knows: limits use its real size (16 vCPU, 64 GiB).
	out := export(t, bp, Karpenter)
	if !strings.Contains(out, "limits:\n    cpu: \"48\"\n    memory: 192Gi\n") {
		t.Errorf("limits for 3 m6i.4xlarge:\n%s", out)
	}
	// A type it does not: limits use the blueprint's machine.
	bp.Spec.Pools[1].Machine.InstanceTypes = &v1alpha1.InstanceTypes{EKS: "c7i.4xlarge"}
	bp.Spec.Pools[1].Machine.CPU = resource.MustParse("15500m")
	out = export(t, bp, Karpenter)
	if !strings.Contains(out, "limits:\n    cpu: 46500m\n    memory: 192Gi\n") {
		t.Errorf("limits for 3 unknown machines of 15500m and 64Gi:\n%s", out)
	}
}

func TestKarpenterMinimumNoted(t *testing.T) {
	bp := loadBlueprint(t, base)
	bp.Spec.Pools[1].Autoscale.Min = 2
	if out := flat(export(t, bp, Karpenter)); !strings.Contains(out, "the blueprint's minimum of 2 nodes is not kept") {
		t.Errorf("no note about the minimum:\n%s", out)
	}
	bp.Spec.Pools[1].Autoscale, bp.Spec.Pools[1].Count = nil, ptr.To[int32](5)
	if out := flat(export(t, bp, Karpenter)); !strings.Contains(out, "the blueprint's count of 5 is only the limit here") {
		t.Errorf("no note about the fixed count:\n%s", out)
	}
}
