package autoscaler

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"berth.io/berth/internal/objtest"
)

// twoPools is a blueprint with a system pool (tainted, so workload pods
// never fit it) and autoscaled pools; pools is their YAML list items.
func twoPools(expander, pools string) string {
	return fmt.Sprintf(`  zones: [zone-1]
  autoscaler: {expander: %q}
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
%s`, expander, pools)
}

// optionsFor runs the first half of scaleUp: the pending pods that fit
// no existing or upcoming node, packed onto each pool that may grow.
func optionsFor(t *testing.T, w *world, v *view, pending []*corev1.Pod) []*option {
	t.Helper()
	ctx := context.Background()
	sim, err := v.simulation(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	_, left, err := sim.Place(ctx, pending)
	if err != nil {
		t.Fatal(err)
	}
	opts, _, err := w.c.options(ctx, v, sim, left)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

func poolsOf(opts []*option) []string {
	var out []string
	for _, o := range opts {
		out = append(out, fmt.Sprintf("%s(%d pods on %d nodes)", o.g.name(), len(o.packing.Placements), o.packing.Nodes))
	}
	return out
}

// expected waste, computed here from the definition rather than by
// waste(): unrequested CPU share plus unrequested memory share of the
// new nodes, nothing reserved in these blueprints.
func wantWaste(nodes int, nodeCPU, nodeMemGi, podCPU, podMemGi float64, pods int) float64 {
	cpu := nodeCPU * float64(nodes)
	mem := nodeMemGi * float64(nodes)
	return (cpu-podCPU*float64(pods))/cpu + (mem-podMemGi*float64(pods))/mem
}

func TestExpanderMostPods(t *testing.T) {
	// One node each: the 4-CPU node holds two 1.5-CPU pods, the 16-CPU
	// node all eight.
	w := newWorld(t, twoPools("most-pods", `  - {name: small, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 0, max: 1}}
  - {name: big, machine: {cpu: 16, memory: 64Gi}, autoscale: {min: 0, max: 1}}
`), 1)
	pending := pendingPods("web", 8, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("1500m").Memory("1Gi") })
	w.add(pending...)
	v := w.view()
	opts := optionsFor(t, w, v, pending)
	if len(opts) != 2 {
		t.Fatalf("options %v; want small and big", poolsOf(opts))
	}
	pick, why := w.c.expand(v, opts)
	if pick.g.name() != "big" || len(pick.packing.Placements) != 8 {
		t.Errorf("most-pods picked %s with %d pods (%s); want big with all 8 (options %v)", pick.g.name(), len(pick.packing.Placements), why, poolsOf(opts))
	}
}

func TestExpanderLeastWaste(t *testing.T) {
	pools := `  - {name: small, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 0, max: 10}}
  - {name: big, machine: {cpu: 16, memory: 64Gi}, autoscale: {min: 0, max: 10}}
`
	for _, tc := range []struct {
		name           string
		pods           int
		cpu, mem       string
		podCPU, podMem float64
		smallN, bigN   int
		want           string
	}{
		// Three 1-CPU/4Gi pods fill 3/4 of one small node, 3/16 of a big one.
		{name: "small pods fill the small node", pods: 3, cpu: "1", mem: "4Gi", podCPU: 1, podMem: 4, smallN: 1, bigN: 1, want: "small"},
		// Five 3-CPU/12Gi pods: one each on five small nodes (a quarter of
		// each idle), all five on one big node (1/16 idle).
		{name: "bigger pods waste less on the big node", pods: 5, cpu: "3", mem: "12Gi", podCPU: 3, podMem: 12, smallN: 5, bigN: 1, want: "big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, twoPools("least-waste", pools), 1)
			pending := pendingPods("app", tc.pods, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU(tc.cpu).Memory(tc.mem) })
			w.add(pending...)
			v := w.view()
			opts := optionsFor(t, w, v, pending)
			if len(opts) != 2 {
				t.Fatalf("options %v; want small and big", poolsOf(opts))
			}
			want := map[string]float64{
				"small": wantWaste(tc.smallN, 4, 16, tc.podCPU, tc.podMem, tc.pods),
				"big":   wantWaste(tc.bigN, 16, 64, tc.podCPU, tc.podMem, tc.pods),
			}
			for _, o := range opts {
				if got := waste(o); fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", want[o.g.name()]) {
					t.Errorf("waste of pool %s (%d nodes) = %.4f; want %.4f", o.g.name(), o.packing.Nodes, got, want[o.g.name()])
				}
			}
			pick, why := w.c.expand(v, opts)
			if pick.g.name() != tc.want {
				t.Errorf("least-waste picked %s (%s); want %s (waste %v)", pick.g.name(), why, tc.want, want)
			}
		})
	}
}

func TestExpanderPriority(t *testing.T) {
	for _, tc := range []struct{ small, big int32 }{{10, 1}, {1, 10}} {
		w := newWorld(t, twoPools("priority", fmt.Sprintf(`  - {name: small, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 0, max: 10, priority: %d}}
  - {name: big, machine: {cpu: 16, memory: 64Gi}, autoscale: {min: 0, max: 10, priority: %d}}
`, tc.small, tc.big)), 1)
		pending := pendingPods("app", 2, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("1") })
		w.add(pending...)
		v := w.view()
		opts := optionsFor(t, w, v, pending)
		if len(opts) != 2 {
			t.Fatalf("options %v; want small and big", poolsOf(opts))
		}
		want := "small"
		if tc.big > tc.small {
			want = "big"
		}
		if pick, why := w.c.expand(v, opts); pick.g.name() != want {
			t.Errorf("priorities small=%d big=%d: picked %s (%s); want %s", tc.small, tc.big, pick.g.name(), why, want)
		}
	}
}

func TestExpanderRandomSeeded(t *testing.T) {
	w := newWorld(t, twoPools("random", `  - {name: small, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 0, max: 10}}
  - {name: big, machine: {cpu: 16, memory: 64Gi}, autoscale: {min: 0, max: 10}}
`), 1)
	pending := pendingPods("app", 2, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("1") })
	w.add(pending...)
	v := w.view()
	opts := optionsFor(t, w, v, pending)
	if len(opts) != 2 {
		t.Fatalf("options %v; want small and big", poolsOf(opts))
	}
	picks := map[string]int{}
	for seed := uint64(1); seed <= 64; seed++ {
		first, _ := NewController(fake.NewClientset(), Options{Seed: seed, Clock: w.clock}).expand(v, opts)
		again, _ := NewController(fake.NewClientset(), Options{Seed: seed, Clock: w.clock}).expand(v, opts)
		if first != again {
			t.Errorf("seed %d picked %s, then %s", seed, first.g.name(), again.g.name())
		}
		picks[first.g.name()]++
	}
	if picks["small"] == 0 || picks["big"] == 0 {
		t.Errorf("over 64 seeds random picked %v; want both pools", picks)
	}
}

func TestExpanderChain(t *testing.T) {
	// small and big tie on priority 5; mid (priority 1) would waste
	// nothing at all, so least-waste alone would pick it. priority drops
	// it, least-waste then picks small, and random is never asked.
	w := newWorld(t, twoPools("priority,least-waste", `  - {name: small, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 0, max: 10, priority: 5}}
  - {name: big, machine: {cpu: 16, memory: 64Gi}, autoscale: {min: 0, max: 10, priority: 5}}
  - {name: mid, machine: {cpu: 3, memory: 12Gi}, autoscale: {min: 0, max: 10, priority: 1}}
`), 1)
	pending := pendingPods("app", 3, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("1").Memory("4Gi") })
	w.add(pending...)
	v := w.view()
	opts := optionsFor(t, w, v, pending)
	if len(opts) != 3 {
		t.Fatalf("options %v; want small, big and mid", poolsOf(opts))
	}
	pick, why := w.c.expand(v, opts)
	if pick.g.name() != "small" {
		t.Errorf("priority,least-waste picked %s (%s); want small", pick.g.name(), why)
	}
	for _, step := range []string{"priority kept 2 of 3", "least-waste kept 1 of 2"} {
		if !strings.Contains(why, step) {
			t.Errorf("the expander says %q; want it to say %q", why, step)
		}
	}
	if strings.Contains(why, "random kept") {
		t.Errorf("the expander says %q; random should not have been needed", why)
	}
}
