package export

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
)

// TestAKSRules covers what AKS refuses; each case breaks the base
// blueprint in one place.
func TestAKSRules(t *testing.T) {
	tests := []struct {
		name   string
		change func(bp *v1alpha1.Blueprint)
		want   []wantProblem
	}{{
		name:   "System pool on Windows",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[0].OS = v1alpha1.Windows },
		want:   []wantProblem{{"system", "spec.pools[0].os", "must run Linux", "set os: Linux"}},
	}, {
		name:   "System pool with no nodes",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[0].Count = ptr.To[int32](0) },
		want:   []wantProblem{{"system", "spec.pools[0].count", "at least one node", "set it to 1 or more"}},
	}, {
		name: "System pool autoscaled from zero",
		change: func(bp *v1alpha1.Blueprint) {
			bp.Spec.Pools[0].Count, bp.Spec.Pools[0].Autoscale = nil, &v1alpha1.Autoscale{Min: 0, Max: 3}
		},
		want: []wantProblem{{"system", "spec.pools[0].autoscale.min", "at least one node", "set it to 1 or more"}},
	}, {
		name:   "System pool on Spot",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[0].Capacity = v1alpha1.Spot },
		want:   []wantProblem{{"system", "spec.pools[0].capacity", "cannot use Spot", "set capacity: OnDemand"}},
	}, {
		name:   "System pool with room for too few pods",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[0].MaxPods = 20 },
		want:   []wantProblem{{"system", "spec.pools[0].maxPods", "at least 30 pods", "set maxPods to 30"}},
	}, {
		name:   "too many pods per node",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[1].MaxPods = 500 },
		want:   []wantProblem{{"work", "spec.pools[1].maxPods", "10 to 250 pods", "between 10 and 250"}},
	}, {
		name:   "too many nodes",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[1].Autoscale.Max = 1500 },
		want:   []wantProblem{{"work", "spec.pools[1]", "at most 1000 nodes", "split the pool"}},
	}, {
		name:   "name too long",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[1].Name = "training-jobs-a" },
		want:   []wantProblem{{"training-jobs-a", "spec.pools[1].name", `1 to 12 lower-case letters and digits, starting with a letter; without its '-' this name is "trainingjobsa" (13 characters)`, `rename the pool, e.g. to "trainingjobs"`}},
	}, {
		name:   "name starting with a digit",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Pools[1].Name = "4gpu" },
		want:   []wantProblem{{"4gpu", "spec.pools[1].name", "starting with a letter", `e.g. to "gpu"`}},
	}, {
		name: "Windows name too long",
		change: func(bp *v1alpha1.Blueprint) {
			bp.Spec.Pools[1].OS, bp.Spec.Pools[1].Name = v1alpha1.Windows, "windows"
		},
		want: []wantProblem{{"windows", "spec.pools[1].name", "Windows node pool with 1 to 6", `e.g. to "window"`}},
	}, {
		name: "two pools with one AKS name",
		change: func(bp *v1alpha1.Blueprint) {
			extra := bp.Spec.Pools[1]
			extra.Name = "wo-rk"
			bp.Spec.Pools = append(bp.Spec.Pools, extra)
		},
		want: []wantProblem{{"wo-rk", "spec.pools[2].name", `its AKS name "work" is also pool work's`, "rename one"}},
	}, {
		name: "taint without a value",
		change: func(bp *v1alpha1.Blueprint) {
			bp.Spec.Pools[1].Taints = []v1alpha1.Taint{v1alpha1.MustParseTaint("dedicated:NoSchedule")}
		},
		want: []wantProblem{{"work", "spec.pools[1].taints[0]", `KEY=VALUE:EFFECT`, `give it a value, e.g. "dedicated=true:NoSchedule"`}},
	}, {
		name:   "four zones",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Zones = []string{"a", "b", "c", "d"} },
		want:   []wantProblem{{"", "spec.zones[3]", `zones 1, 2 and 3 only; zone "d" would be zone 4`, "at most three zones"}},
	}, {
		name:   "two zones with one number",
		change: func(bp *v1alpha1.Blueprint) { bp.Spec.Zones = []string{"east-1", "west-1"} },
		want:   []wantProblem{{"", "spec.zones[1]", `zone "east-1" and zone "west-1" would both be AKS zone 1`, "different digits"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bp := loadBlueprint(t, base)
			tt.change(bp)
			checkProblems(t, problemsOf(t, bp, AKS), tt.want)
		})
	}
}

func TestAKSNames(t *testing.T) {
	bp := loadBlueprint(t, base)
	bp.Spec.Pools[1].Name = "spot-gpu"
	out := flat(export(t, bp, AKS))
	for _, want := range []string{
		"  --name spotgpu \\\n",
		"pool spot-gpu is AKS pool spotgpu: its nodes carry agentpool=spotgpu and berth.io/pool=spot-gpu.",
		" berth.io/pool=spot-gpu ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "agentpool=") && strings.Contains(out, "--labels agentpool") {
		t.Error("export sets agentpool, which AKS sets itself")
	}
}

func TestAKSSpotTaint(t *testing.T) {
	bp := loadBlueprint(t, base)
	bp.Spec.Pools[1].Capacity = v1alpha1.Spot
	bp.Spec.Pools[1].Taints = []v1alpha1.Taint{v1alpha1.MustParseTaint("berth.io/capacity=spot:NoSchedule")}
	out := flat(export(t, bp, AKS))
	for _, want := range []string{
		"--priority Spot \\\n  --eviction-policy Delete \\\n  --spot-max-price -1",
		"--node-taints berth.io/capacity=spot:NoSchedule,kubernetes.azure.com/scalesetpriority=spot:NoSchedule\n",
		"add it to spec.pools[1].taints.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %q:\n%s", want, out)
		}
	}

	// Once the blueprint has the taint, it is passed once and not explained.
	bp.Spec.Pools[1].Taints = append(bp.Spec.Pools[1].Taints, v1alpha1.MustParseTaint(aksSpotTaint))
	out = flat(export(t, bp, AKS))
	if strings.Count(out, aksSpotTaint) != 1 || strings.Contains(out, "add it to spec.pools") {
		t.Errorf("a blueprint with the Spot taint gets it again or a note about it:\n%s", out)
	}
}

func TestAKSZones(t *testing.T) {
	tests := []struct {
		zones, pool []string
		want        string
	}{
		{[]string{"zone-1", "zone-2", "zone-3"}, nil, "--zones 1 2 3"},
		{[]string{"westeurope-3", "westeurope-1"}, nil, "--zones 3 1"},
		{[]string{"a", "b", "c"}, []string{"c"}, "--zones 3"},
		{[]string{"us-east-1a", "us-east-1b"}, nil, "--zones 1 2"},
	}
	for _, tt := range tests {
		bp := loadBlueprint(t, base)
		bp.Spec.Zones = tt.zones
		for i := range bp.Spec.Pools {
			bp.Spec.Pools[i].Zones = tt.zones
			if tt.pool != nil {
				bp.Spec.Pools[i].Zones = tt.pool
			}
		}
		if out := export(t, bp, AKS); !strings.Contains(out, tt.want+" \\\n") {
			t.Errorf("zones %v, pool %v: export lacks %q:\n%s", tt.zones, tt.pool, tt.want, out)
		}
	}

	// The default zone is no zone at all.
	bp := loadBlueprint(t, strings.Replace(base, "  zones: [zone-1, zone-2]\n", "", 1))
	if out := flat(export(t, bp, AKS)); strings.Contains(out, "--zones") || !strings.Contains(out, "not pinned to availability zones") {
		t.Errorf("a blueprint without zones gets --zones, or no note:\n%s", out)
	}
}
