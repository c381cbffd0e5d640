package karpenter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/export"
	"berth.io/berth/internal/rehearse/cost"
)

// The retail blueprint's User pools as instance types: gpu and spot-gpu
// share their AWS type, one entry with an on-demand offering per zone
// and a cheaper spot one; cpu has its own; the System pool none. Each
// has the capacity of the pool's nodes, GPUs included.
func TestInstanceTypesRetail(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	types, err := instanceTypes(bp, cost.Shipped())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for i, p := range bp.Spec.Pools {
		if p.Mode == "System" {
			continue
		}
		name, err := export.InstanceType(bp, i, export.Karpenter)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = append(want[name], p.Name)
	}
	if len(types) != len(want) {
		t.Fatalf("%d instance types; want %d, one per AWS type of the User pools (%v)", len(types), len(want), want)
	}
	for _, it := range types {
		pools := want[it.Name]
		if len(pools) != len(it.pools) {
			t.Errorf("%s: pools %v; want %v", it.Name, it.pools, pools)
		}
		if it.Requirements.Get(corev1.LabelInstanceTypeStable).Any() != it.Name {
			t.Errorf("%s: instance-type requirement %v", it.Name, it.Requirements.Get(corev1.LabelInstanceTypeStable))
		}
		if _, ok := it.pools["spot-gpu"]; !ok {
			continue
		}
		if gpus := it.Capacity["nvidia.com/gpu"]; gpus.Value() != 1 {
			t.Errorf("%s: %s GPUs; want the pool's 1", it.Name, gpus.String())
		}
		if cpu := it.Capacity[corev1.ResourceCPU]; cpu.Value() != 24 {
			t.Errorf("%s: %s CPUs; want the pool's 24", it.Name, cpu.String())
		}
		prices := map[string]float64{}
		zones := map[string]int{}
		for _, o := range it.Offerings {
			ct := o.Requirements.Get(karpv1.CapacityTypeLabelKey).Any()
			prices[ct] = o.Price
			zones[ct]++
		}
		if zones[karpv1.CapacityTypeSpot] != 3 || zones[karpv1.CapacityTypeOnDemand] != 3 {
			t.Errorf("%s: offerings per capacity type %v; want spot and on-demand in each of the 3 zones", it.Name, zones)
		}
		if !(prices[karpv1.CapacityTypeSpot] > 0 && prices[karpv1.CapacityTypeSpot] < prices[karpv1.CapacityTypeOnDemand]) {
			t.Errorf("%s: prices %v; want spot cheaper than on-demand, neither zero", it.Name, prices)
		}
	}
}

// A pool the price table cannot price is a problem: Karpenter chooses by
// price, and berth makes none up.
func TestInstanceTypesUnpriced(t *testing.T) {
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	other, probs := cost.ReadTable("other.csv", []byte(cost.Header+"\naws,x1.tiny,us-east-1,0.1,60%,https://example.com,2024\n"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if _, err := instanceTypes(bp, other); err == nil {
		t.Fatal("instance types made without prices; want a problem per unpriced pool")
	}
}
