package autoscaler

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/simulate"
)

// cpuAndGPU is the retail template's shape, smaller: a CPU pool at its
// min of 1 and a tainted 1-GPU pool at zero.
const cpuAndGPU = `  zones: [zone-1]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: cpu, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 1, max: 3}}
  - name: gpu
    machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}
    autoscale: {min: 0, max: 2}
    taints: ["gpu=true:NoSchedule"]
`

func scaleUp(t *testing.T, w *world) (*view, bool) {
	t.Helper()
	v := w.view()
	up, err := w.c.scaleUp(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return v, up
}

// reasons is, for each pending pod, why each pool would not take it.
func reasons(t *testing.T, w *world, pending []*corev1.Pod) map[string][]castatus.NotTriggered {
	t.Helper()
	ctx := context.Background()
	v := w.view()
	sim, err := v.simulation(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	_, left, err := sim.Place(ctx, pending)
	if err != nil {
		t.Fatal(err)
	}
	_, why, err := w.c.options(ctx, v, sim, left)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]castatus.NotTriggered{}
	for _, p := range pending {
		if r, ok := why[p.UID]; ok {
			out[p.Name] = r
		}
	}
	return out
}

func TestScaleUpNothingForPodsThatFit(t *testing.T) {
	t.Run("an existing node has room", func(t *testing.T) {
		w := newWorld(t, cpuAndGPU, 1)
		// The scheduler marked it unschedulable a moment ago; a pod has
		// since finished and freed the room.
		w.add(replica("web-0", "web").CPU("3").Unschedulable("").Obj())
		if _, up := scaleUp(t, w); up {
			t.Errorf("scaled up for a pod that fits node cpu-0")
		}
		if got := w.nodeNames("cpu"); len(got) != 1 {
			t.Errorf("pool cpu has nodes %v; want only cpu-0", got)
		}
	})
	t.Run("an upcoming node has room", func(t *testing.T) {
		w := newWorld(t, cpuAndGPU, 1)
		w.pool("gpu").Autoscale.ProvisioningTime.Duration = 10 * time.Minute
		w.add(replica("train-0", "train").GPU("1").Tolerate("gpu").Unschedulable("").Obj())
		if _, up := scaleUp(t, w); !up {
			t.Fatal("no scale-up for a GPU pod with no GPU node")
		}
		// The next scan, before the node registers: the node asked for
		// holds the pod.
		w.clock.Step(time.Minute)
		v, up := scaleUp(t, w)
		if up {
			t.Errorf("scaled up again for a pod the upcoming node holds")
		}
		if g := w.group(v, "gpu"); g.target() != 1 || len(g.upcoming) != 1 {
			t.Errorf("pool gpu target %d, %d upcoming; want 1 and 1", g.target(), len(g.upcoming))
		}
	})
	t.Run("a registered node has not started yet", func(t *testing.T) {
		// As its kubelet registers it: not Ready, tainted not-ready, its
		// GPUs not advertised; ten seconds old.
		w := newWorld(t, cpuAndGPU, 1)
		n := pools.StripGPUs(pools.NewNode(w.bp, w.pool("gpu"), 0))
		n.CreationTimestamp = metav1.NewTime(t0.Add(-10 * time.Second))
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
		if _, err := w.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.add(replica("train-0", "train").GPU("1").Tolerate("gpu").Unschedulable("").Obj())
		if v, up := scaleUp(t, w); up {
			t.Errorf("scaled up to %d for a pod the starting node gpu-0 will hold", w.group(v, "gpu").target())
		}
	})
}

func TestScaleUpBinPacks(t *testing.T) {
	w := newWorld(t, cpuAndGPU, 1)
	// cpu-0 is full; five 2-CPU pods fit two to a 4-CPU node: 3 nodes
	// would do, but the pool's max of 3 leaves room for 2 new ones.
	w.add(replica("full", "full").CPU("4").On("cpu-0").Obj())
	pending := pendingPods("web", 4, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("2") })
	w.add(pending...)
	v, up := scaleUp(t, w)
	if !up {
		t.Fatal("no scale-up")
	}
	g := w.group(v, "cpu")
	if g.target() != 3 || len(g.upcoming) != 2 {
		t.Errorf("pool cpu target %d with %d upcoming; want 3 with 2 (four 2-CPU pods on two new 4-CPU nodes)", g.target(), len(g.upcoming))
	}
	if got, want := w.nodeNames("cpu"), []string{"cpu-0", "cpu-1", "cpu-2"}; !slices.Equal(got, want) {
		t.Errorf("nodes of pool cpu %v; want %v", got, want)
	}
	ev := w.events()
	if n := countPrefix(ev, "Normal "+castatus.ReasonTriggeredScaleUp+" "); n != 4 {
		t.Errorf("%d TriggeredScaleUp events; want one for each of the 4 pods: %q", n, ev)
	}
	if n := countPrefix(ev, "Normal "+castatus.ReasonScaledUpGroup+" Scale-up: setting group cpu size to 3 instead of 1 (max: 3)"); n != 1 {
		t.Errorf("want one ScaledUpGroup event for cpu 1 -> 3; got %q", ev)
	}
}

func TestScaleUpNeverPastMax(t *testing.T) {
	w := newWorld(t, cpuAndGPU, 1)
	w.add(replica("full", "full").CPU("4").On("cpu-0").Obj())
	// Seven 2-CPU pods want four new nodes; max 3 allows two: four pods
	// placed, three left, each told the pool is at its max.
	pending := pendingPods("web", 7, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("2") })
	w.add(pending...)
	why := reasons(t, w, pending)
	v, up := scaleUp(t, w)
	if !up {
		t.Fatal("no scale-up")
	}
	if g := w.group(v, "cpu"); g.target() != 3 {
		t.Errorf("pool cpu target %d; want its max, 3", g.target())
	}
	// Every pod is told why gpu (tainted) would not take it; only the
	// three left over are told cpu is at its max.
	misfits := 0
	for _, p := range pending {
		r := why[p.Name]
		if !slices.ContainsFunc(r, func(n castatus.NotTriggered) bool { return n.Pool == "cpu" }) {
			continue
		}
		misfits++
		want := []castatus.NotTriggered{
			{Pool: "cpu", Reason: castatus.MaxSizeReached + " (3)"},
			{Pool: "gpu", Reason: "node(s) had untolerated taint(s)"},
		}
		if diff := cmp.Diff(want, r); diff != "" {
			t.Errorf("pod %s: reasons (-want +got):\n%s", p.Name, diff)
		}
	}
	if misfits != 3 {
		t.Errorf("%d pods were left with reasons; want 3: %v", misfits, why)
	}
	// The next scan: the new nodes are Ready and hold four pods; the
	// three left over were told a moment ago and are not told again;
	// one more pod comes. At max, nothing grows; the new pod is told.
	w.events()
	w.ready("cpu-1", "cpu-2")
	w.pods = slices.DeleteFunc(w.pods, func(p *corev1.Pod) bool { return why[p.Name] != nil && len(why[p.Name]) == 1 })
	for i, node := range []string{"cpu-1", "cpu-1", "cpu-2", "cpu-2"} {
		w.add(replica("web-bound-"+strconv.Itoa(i), "web").CPU("2").On(node).Obj())
	}
	w.add(pendingPods("more", 1, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("2") })...)
	v, up = scaleUp(t, w)
	if up {
		t.Errorf("scaled up past max: pool cpu target %d", w.group(v, "cpu").target())
	}
	want := "Normal " + castatus.ReasonNotTriggerScaleUp + " pod didn't trigger scale-up: pool cpu: max node group size reached (3); pool gpu: "
	if ev := w.events(); countPrefix(ev, want) != 1 {
		t.Errorf("events %q; want one NotTriggerScaleUp naming the max, for the new pod", ev)
	}
	// A minute on, every pod still waiting is told again.
	w.clock.Step(notifyAgain)
	scaleUp(t, w)
	if ev := w.events(); countPrefix(ev, want) != 4 {
		t.Errorf("events %q; want the 4 waiting pods told again after %s", ev, notifyAgain)
	}
}

func TestScaleUpSkipsPoolInBackoff(t *testing.T) {
	w := newWorld(t, cpuAndGPU, 1)
	w.add(replica("full", "full").CPU("4").On("cpu-0").Obj())
	pending := pendingPods("web", 1, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("2") })
	w.add(pending...)
	w.view() // make the groups
	w.groups["cpu"].backoffUntil = t0.Add(backoffDuration)
	w.groups["cpu"].backoffWhy = "1 node(s) did not become Ready within maxNodeProvisionTime (15m0s)"
	want := []castatus.NotTriggered{
		{Pool: "cpu", Reason: castatus.InBackoff + " (1 node(s) did not become Ready within maxNodeProvisionTime (15m0s))"},
		{Pool: "gpu", Reason: "node(s) had untolerated taint(s)"},
	}
	if diff := cmp.Diff(want, reasons(t, w, pending)["web-0"]); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	if v, up := scaleUp(t, w); up || w.group(v, "cpu").target() != 1 {
		t.Errorf("pool cpu in backoff grew to %d", w.group(v, "cpu").target())
	}
	// Backoff over: it grows.
	w.clock.Step(backoffDuration)
	if v, up := scaleUp(t, w); !up || w.group(v, "cpu").target() != 2 {
		t.Errorf("after the backoff pool cpu target %d; want 2", w.group(v, "cpu").target())
	}
}

func TestScaleUpNoPoolFits(t *testing.T) {
	w := newWorld(t, cpuAndGPU, 1)
	pending := pendingPods("lost", 2, func(p *objtest.PodWrapper) *objtest.PodWrapper {
		return p.CPU("1").NodeSelector(v1alpha1.LabelPool, "no-such-pool")
	})
	w.add(pending...)
	got := reasons(t, w, pending)["lost-0"]
	pools := map[string]string{}
	for _, r := range got {
		pools[r.Pool] = r.Reason
	}
	if len(pools) != 2 || !strings.Contains(pools["cpu"], "didn't match Pod's node affinity/selector") || pools["gpu"] == "" {
		t.Errorf("reasons %v; want every autoscaled pool (cpu, gpu) named with its filter's reason, and not the fixed system pool", got)
	}
	if _, up := scaleUp(t, w); up {
		t.Error("scaled up for pods no pool fits")
	}
	if n := countPrefix(w.events(), "Normal "+castatus.ReasonNotTriggerScaleUp+" "); n != 2 {
		t.Errorf("%d NotTriggerScaleUp events; want one per pod", n)
	}
	if n := len(w.nodes()); n != 2 {
		t.Errorf("%d nodes; want the 2 we started with", n)
	}
}

func TestScaleUpCountsDaemonSetPods(t *testing.T) {
	// Two 1-CPU pods share one new 4-CPU node; a DaemonSet taking 2.5
	// CPU of each node leaves room for one, so they need two.
	for _, tc := range []struct {
		name  string
		ds    string
		nodes int
	}{{"without a DaemonSet", "", 1}, {"with a 2.5-CPU DaemonSet", "2500m", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, `  zones: [zone-1]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: cpu, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 0, max: 5}}
`, 1)
			if tc.ds != "" {
				w.daemonSets = append(w.daemonSets, daemonSet("agent", tc.ds))
			}
			w.add(pendingPods("web", 2, func(p *objtest.PodWrapper) *objtest.PodWrapper { return p.CPU("1") })...)
			v, up := scaleUp(t, w)
			if !up {
				t.Fatal("no scale-up")
			}
			if g := w.group(v, "cpu"); g.target() != tc.nodes {
				t.Errorf("pool cpu grew to %d; want %d", g.target(), tc.nodes)
			}
		})
	}
}

func TestScaleUpFromZero(t *testing.T) {
	w := newWorld(t, cpuAndGPU, 1)
	if n := len(w.nodeNames("gpu")); n != 0 {
		t.Fatalf("pool gpu starts with %d nodes", n)
	}
	w.add(replica("train-0", "train").GPU("1").Tolerate("gpu").Unschedulable("").Obj())
	v, up := scaleUp(t, w)
	if !up {
		t.Fatal("no scale-up")
	}
	if g := w.group(v, "gpu"); g.target() != 1 {
		t.Errorf("pool gpu target %d; want 1", g.target())
	}
	// The node registers as its kubelet would: without its GPUs until
	// the device plugin advertises them.
	n := w.node("gpu-0")
	if _, ok := n.Status.Allocatable["nvidia.com/gpu"]; ok {
		t.Errorf("gpu-0 registered with GPUs in allocatable: %v", n.Status.Allocatable)
	}
	if n.Labels[v1alpha1.LabelGPUCount] != "1" {
		t.Errorf("gpu-0 labels %v; want %s=1", n.Labels, v1alpha1.LabelGPUCount)
	}
}

// A pod whose claim is bound to a volume in zone-2 grows the pool in
// zone-2 only: the scheduler's VolumeZone plugin, in the simulation,
// turns down the zone-1 pool's new node. (A pool over both zones would
// add its zone-1 node first, as a node group over several zones does in
// cluster-autoscaler, which is why its docs advise a node group per zone
// for zonal volumes.)
func TestScaleUpFollowsTheVolumesZone(t *testing.T) {
	w := newWorld(t, `  zones: [zone-1, zone-2]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, zones: [zone-1], taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - name: gpu-a
    zones: [zone-1]
    machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}
    autoscale: {min: 0, max: 2}
    taints: ["gpu=true:NoSchedule"]
  - name: gpu-b
    zones: [zone-2]
    machine: {cpu: 24, memory: 96Gi, gpu: {count: 1, product: NVIDIA-L4}}
    autoscale: {min: 0, max: 2}
    taints: ["gpu=true:NoSchedule"]
`, 1)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-ckpt", Labels: map[string]string{corev1.LabelTopologyZone: "zone-2"}},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:       "standard",
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "standard.storage.berth.io", VolumeHandle: "ckpt"}},
		},
	}
	pod := replica("train-0", "train").GPU("1").Tolerate("gpu").Unschedulable("").Obj()
	w.claims = []*corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: "ckpt"},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("standard"), VolumeName: pv.Name},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}}
	w.storage = &simulate.Storage{Volumes: []*corev1.PersistentVolume{pv}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "ckpt", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "ckpt"}}}}
	w.add(pod)

	if _, up := scaleUp(t, w); !up {
		t.Fatalf("no scale-up: %v", reasons(t, w, []*corev1.Pod{pod}))
	}
	if a, b := w.nodeNames("gpu-a"), w.nodeNames("gpu-b"); len(a) != 0 || len(b) != 1 {
		t.Errorf("pool gpu-a (zone-1) has nodes %v, gpu-b (zone-2) %v; want none and one", a, b)
	}
	if r := reasons(t, w, []*corev1.Pod{pod}); !strings.Contains(fmt.Sprint(r["train-0"]), "volume zone") {
		t.Errorf("why gpu-a would not take the pod: %v; want the VolumeZone plugin's reason", r["train-0"])
	}
}
