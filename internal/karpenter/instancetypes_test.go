package karpenter

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/prices"
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
	types, err := instanceTypes(bp, prices.Shipped())
	if err != nil {
		t.Fatal(err)
	}
	// The AWS types the retail pools' machines come to, written out
	// (not taken from the export that picks them): 16 CPUs and 64Gi is an
	// m6i.4xlarge; 24 CPUs, 96Gi and one L4 a g6.8xlarge, for both GPU
	// pools; the spot offerings are spot-gpu's, the only spot pool.
	want := map[string]struct {
		pools    []string
		cpu, gpu int64
		spot     bool
	}{
		"m6i.4xlarge": {pools: []string{"cpu"}, cpu: 16},
		"g6.8xlarge":  {pools: []string{"gpu", "spot-gpu"}, cpu: 24, gpu: 1, spot: true},
	}
	if len(types) != len(want) {
		t.Fatalf("%d instance types; want %d, one per AWS type of the User pools (%v)", len(types), len(want), want)
	}
	for _, it := range types {
		w, ok := want[it.Name]
		if !ok {
			t.Errorf("instance type %s; want only %v", it.Name, want)
			continue
		}
		if got := slices.Sorted(maps.Keys(it.pools)); !slices.Equal(got, w.pools) {
			t.Errorf("%s: pools %v; want %v", it.Name, got, w.pools)
		}
		if it.Requirements.Get(corev1.LabelInstanceTypeStable).Any() != it.Name {
			t.Errorf("%s: instance-type requirement %v", it.Name, it.Requirements.Get(corev1.LabelInstanceTypeStable))
		}
		if gpus := it.Capacity[objtest.GPU]; gpus.Value() != w.gpu {
			t.Errorf("%s: %s GPUs; want %d", it.Name, gpus.String(), w.gpu)
		}
		if cpu := it.Capacity[corev1.ResourceCPU]; cpu.Value() != w.cpu {
			t.Errorf("%s: %s CPUs; want %d", it.Name, cpu.String(), w.cpu)
		}
		prices := map[string]float64{}
		zones := map[string]int{}
		for _, o := range it.Offerings {
			ct := o.Requirements.Get(karpv1.CapacityTypeLabelKey).Any()
			prices[ct] = o.Price
			zones[ct]++
		}
		if zones[karpv1.CapacityTypeOnDemand] != 3 || prices[karpv1.CapacityTypeOnDemand] <= 0 {
			t.Errorf("%s: offerings per capacity type %v, prices %v; want a priced on-demand offering in each of the 3 zones", it.Name, zones, prices)
		}
		spot := zones[karpv1.CapacityTypeSpot] == 3 && prices[karpv1.CapacityTypeSpot] > 0 && prices[karpv1.CapacityTypeSpot] < prices[karpv1.CapacityTypeOnDemand]
		if spot != w.spot || (!w.spot && zones[karpv1.CapacityTypeSpot] != 0) {
			t.Errorf("%s: offerings per capacity type %v, prices %v; want spot offerings (cheaper, in the 3 zones): %t", it.Name, zones, prices, w.spot)
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
	other, probs := prices.ReadTable("other.csv", []byte(prices.Header+"\naws,x1.tiny,us-east-1,0.1,60%,https://example.com,2024\n"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if _, err := instanceTypes(bp, other); err == nil {
		t.Fatal("instance types made without prices; want a problem per unpriced pool")
	}
}
