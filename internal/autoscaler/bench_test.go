package autoscaler

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
)

// benchPools is issue 11's scale: 1,000 nodes over four autoscaled pools
// and a system pool, three zones.
const benchPools = `  zones: [zone-1, zone-2, zone-3]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 3, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: cpu, machine: {cpu: 16, memory: 64Gi}, maxPods: 110, autoscale: {min: 0, max: 1000}}
  - {name: mem, machine: {cpu: 8, memory: 128Gi}, maxPods: 110, autoscale: {min: 0, max: 400}}
  - name: gpu
    machine: {cpu: 32, memory: 256Gi, gpu: {count: 4, product: NVIDIA-A100}}
    autoscale: {min: 0, max: 300}
    taints: ["nvidia.com/gpu=true:NoSchedule"]
  - name: spot
    capacity: Spot
    machine: {cpu: 16, memory: 64Gi}
    autoscale: {min: 0, max: 200}
    taints: ["berth.io/capacity=spot:NoSchedule"]
`

// benchWorld is 1,000 nodes: 600 CPU nodes with 14 of 16 CPUs
// requested, 200 memory nodes with 120 of 128Gi requested, 150 GPU nodes
// with every GPU taken, 47 spot nodes half used; 5,497 bound pods. util
// scales the CPU and memory nodes' use (1 as described; lower leaves
// them unneeded, for scale-down).
func benchWorld(b *testing.B, util float64) *world {
	w := newWorld(b, benchPools, 1)
	w.rec = &record.FakeRecorder{} // no channel: events are dropped
	w.c.recorder = w.rec
	for _, pool := range []struct {
		name  string
		nodes int
		pods  int
		shape func(*objtest.PodWrapper) *objtest.PodWrapper
	}{
		{"cpu", 600, 7, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU(milli(2000 * util)).Memory("4Gi") }},
		{"mem", 200, 3, func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.CPU("1").Memory(fmt.Sprintf("%dGi", int(40*util)))
		}},
		{"gpu", 150, 4, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.GPU("1").CPU("4").Tolerate("nvidia.com/gpu") }},
		{"spot", 47, 2, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("4").Tolerate(v1alpha1.LabelCapacity) }},
	} {
		for _, n := range w.addNodes(pool.name, pool.nodes) {
			for j := range pool.pods {
				app := fmt.Sprintf("%s-run-%d", pool.name, j)
				w.add(pool.shape(replica(n.Name+"-"+app, app)).On(n.Name).Obj())
			}
		}
	}
	return w
}

func milli(m float64) string { return fmt.Sprintf("%dm", int(m)) }

// benchPending are 5,000 pending pods from five Deployments: 2,500 web
// pods (about 2,000 fit the room left on existing nodes, the rest need
// new ones), 1,000 api pods spread over zones, 500 training pods that
// need new GPU nodes, 800 batch pods that need new CPU or memory nodes,
// and 200 pods that select a pool that does not exist.
func benchPending() []*corev1.Pod {
	var out []*corev1.Pod
	for _, d := range []struct {
		app   string
		n     int
		shape func(*objtest.PodWrapper) *objtest.PodWrapper
	}{
		{"web", 2500, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("1").Memory("2Gi") }},
		{"api", 1000, func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.CPU("500m").Memory("1Gi").Spread(corev1.LabelTopologyZone, 1, "api")
		}},
		{"train", 500, func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.GPU("1").CPU("8").Memory("32Gi").Tolerate("nvidia.com/gpu")
		}},
		{"batch", 800, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("4").Memory("8Gi") }},
		{"lost", 200, func(p *objtest.PodWrapper) *objtest.PodWrapper {
			return p.CPU("1").NodeSelector(v1alpha1.LabelPool, "no-such-pool")
		}},
	} {
		out = append(out, pendingPods(d.app, d.n, d.shape)...)
	}
	return out
}

// BenchmarkScan is one scale-up decision at issue 11's scale: 1,000
// nodes and 5,000 pending pods through Controller.scaleUp (the pods that
// fit existing nodes placed, the rest packed onto each pool's new nodes,
// the expander, the pool grown). Target: 1 s a scan.
func BenchmarkScan(b *testing.B) {
	w := benchWorld(b, 1)
	pending := benchPending()
	w.add(pending...)
	for i := range w.bp.Spec.Pools {
		if as := w.bp.Spec.Pools[i].Autoscale; as != nil {
			// Nodes stay upcoming: the scan's writes are not measured.
			as.ProvisioningTime.Duration = time.Hour
		}
	}
	v := w.view()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, g := range v.groups {
			g.cancel()
		}
		clear(w.c.notified)
		up, err := w.c.scaleUp(ctx, v)
		if err != nil {
			b.Fatal(err)
		}
		if !up {
			b.Fatal("no scale-up")
		}
	}
	b.ReportMetric(float64(len(pending))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
}

// BenchmarkScaleDown is one scale-down evaluation over the same 1,000
// nodes with the CPU and memory nodes at a quarter of the use above
// (under the 0.5 threshold), so that 800 nodes are evaluated for
// removal: blockers checked and their pods' moves simulated.
func BenchmarkScaleDown(b *testing.B) {
	w := benchWorld(b, 0.25)
	v := w.view()
	res := benchScaleDown(b, w, v)
	b.ReportMetric(float64(len(res.candidates)), "candidates")
	b.ReportMetric(float64(len(res.blockedBy[w.group(v, "cpu")])+len(res.blockedBy[w.group(v, "mem")])), "kept")
}

// BenchmarkScaleDownBusy is the same evaluation with every node at or
// over its threshold, as in a cluster running flat out: no node is a
// candidate, so no removal is simulated (TestScaleDownBusy holds the
// verdict; this times it).
func BenchmarkScaleDownBusy(b *testing.B) {
	w := benchWorld(b, 1)
	res := benchScaleDown(b, w, w.view())
	if len(res.candidates) != 0 {
		b.Fatalf("%d candidates, want none", len(res.candidates))
	}
}

// benchScaleDown times scaleDown over v, each time as a new scan would
// see it (no index from the last), and returns the last result.
func benchScaleDown(b *testing.B, w *world, v *view) scanResult {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var res scanResult
	for b.Loop() {
		v.onNode = nil
		res = scanResult{}
		if err := w.c.scaleDown(ctx, v, &res); err != nil {
			b.Fatal(err)
		}
	}
	return res
}
