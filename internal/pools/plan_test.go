package pools

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

func testBlueprint(t *testing.T, pool string) *v1alpha1.Blueprint {
	t.Helper()
	bp, _, err := blueprint.Parse("b.yaml", []byte(`
apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: b}
spec:
  zones: [zone-1, zone-2]
  pools:
  - {name: sys, mode: System, machine: {cpu: 2, memory: 4Gi}}
  - `+pool+`
`))
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

// live is what the cluster would hold for a pool as bp describes it.
func live(bp *v1alpha1.Blueprint, generation, n int) []*corev1.Node {
	var out []*corev1.Node
	for i := range n {
		out = append(out, newNode(bp, &bp.Spec.Pools[1], generation, i))
	}
	return out
}

// registered is nodes as they register, before the device plugin runs.
func registered(nodes []*corev1.Node) []*corev1.Node {
	out := make([]*corev1.Node, len(nodes))
	for i, n := range nodes {
		out[i] = StripGPUs(n)
	}
	return out
}

// withGPUs is nodes advertising n GPUs: "0" once the plugin has gone.
func withGPUs(nodes []*corev1.Node, n string) []*corev1.Node {
	for _, node := range nodes {
		node.Status.Capacity["nvidia.com/gpu"] = resource.MustParse(n)
		node.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse(n)
	}
	return nodes
}

func TestStripGPUs(t *testing.T) {
	bp := testBlueprint(t, `{name: gpu, machine: {cpu: 8, memory: 32Gi, gpu: {count: 4, product: NVIDIA-A100}}, count: 1, taints: ["gpu=true:NoSchedule"]}`)
	n := NewNode(bp, &bp.Spec.Pools[1], 0)
	got := StripGPUs(n)
	for _, l := range []corev1.ResourceList{got.Status.Capacity, got.Status.Allocatable} {
		if _, ok := l["nvidia.com/gpu"]; ok || len(l) != 4 {
			t.Errorf("registered node's resources = %v, want cpu, memory, pods and ephemeral-storage only", l)
		}
	}
	if q := n.Status.Capacity["nvidia.com/gpu"]; q.Value() != 4 || n.Annotations[v1alpha1.AnnotationDevices] != "nvidia.com/gpu=4" {
		t.Errorf("the template node has %s GPUs and devices %q, want 4 and nvidia.com/gpu=4: StripGPUs must not change it", q.String(), n.Annotations[v1alpha1.AnnotationDevices])
	}
	cpu := StripGPUs(NewNode(bp, &bp.Spec.Pools[0], 0))
	if len(cpu.Status.Capacity) != 4 {
		t.Errorf("a node without devices lost resources: %v", cpu.Status.Capacity)
	}
}

func TestPlanPool(t *testing.T) {
	const gpu = `{name: gpu, machine: {cpu: 8, memory: 32Gi, gpu: {count: 1, product: NVIDIA-L4}}, autoscale: {min: 0, max: 3}, taints: ["gpu=true:NoSchedule"]}`
	old := testBlueprint(t, gpu)
	for _, tc := range []struct {
		name, pool  string
		have        []*corev1.Node
		action      Action
		add, remove []string
		field       string
	}{
		{name: "matches", pool: gpu, have: live(old, 1, 2)},
		{name: "scaled to zero stays", pool: gpu},
		{name: "below min grows", pool: strings.Replace(gpu, "min: 0", "min: 3", 1), have: live(old, 1, 2),
			action: Resize, add: []string{"gpu-2"}},
		{name: "above max shrinks from the top", pool: strings.Replace(gpu, "max: 3", "max: 1", 1), have: live(old, 1, 3),
			action: Resize, remove: []string{"gpu-1", "gpu-2"}},
		// The autoscaler removed gpu-1: apply leaves the pool as it is.
		{name: "a gap the autoscaler left stays", pool: gpu, have: []*corev1.Node{live(old, 1, 3)[0], live(old, 1, 3)[2]}},
		{name: "growing fills the gap first", pool: strings.Replace(gpu, "min: 0", "min: 3", 1), have: []*corev1.Node{live(old, 1, 3)[0], live(old, 1, 3)[2]},
			action: Resize, add: []string{"gpu-1"}},
		{name: "taint change replaces", pool: strings.Replace(gpu, "gpu=true", "gpu=yes", 1), have: live(old, 1, 2),
			action: Replace, add: []string{"gpu-g2-0", "gpu-g2-1"}, remove: []string{"gpu-0", "gpu-1"},
			field: "taints: gpu=true:NoSchedule → gpu=yes:NoSchedule"},
		{name: "machine change replaces", pool: strings.Replace(gpu, "cpu: 8", "cpu: 16", 1), have: live(old, 1, 1),
			action: Replace, add: []string{"gpu-g2-0"}, remove: []string{"gpu-0"}, field: "capacity cpu: 8 → 16"},
		{name: "spot replaces", pool: strings.Replace(gpu, "{name: gpu,", "{name: gpu, capacity: Spot,", 1), have: live(old, 1, 1),
			action: Replace, add: []string{"gpu-g2-0"}, remove: []string{"gpu-0"}, field: "label berth.io/capacity: on-demand → spot"},
		{name: "label change is in place", pool: strings.Replace(gpu, "autoscale:", "labels: {team: a}, autoscale:", 1), have: live(old, 1, 2),
			action: Update, field: "label team: (none) → a"},
		// The device plugin is not running: the nodes advertise no GPUs,
		// or none any more, and are still the machines the pool describes.
		{name: "GPUs not yet advertised match", pool: gpu, have: registered(live(old, 1, 2))},
		{name: "GPUs gone with the plugin match", pool: gpu, have: withGPUs(live(old, 1, 2), "0")},
		{name: "GPU count change replaces", pool: strings.Replace(gpu, "count: 1", "count: 2", 1), have: registered(live(old, 1, 1)),
			action: Replace, add: []string{"gpu-g2-0"}, remove: []string{"gpu-0"}, field: "label nvidia.com/gpu.count: 1 → 2"},
		{name: "GPU resource change replaces", pool: strings.Replace(gpu, "product: NVIDIA-L4", "product: NVIDIA-L4, resource: nvidia.com/mig-1g.10gb", 1), have: registered(live(old, 1, 1)),
			action: Replace, add: []string{"gpu-g2-0"}, remove: []string{"gpu-0"}, field: "devices: nvidia.com/gpu=1 → nvidia.com/mig-1g.10gb=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bp := testBlueprint(t, tc.pool)
			ch, err := planPool(bp, &bp.Spec.Pools[1], tc.have, map[string]string{})
			if err != nil {
				t.Fatal(err)
			}
			if ch == nil {
				if tc.action != "" {
					t.Fatalf("no change, want %s", tc.action)
				}
				return
			}
			if ch.Action != tc.action {
				t.Fatalf("action %s, want %s (fields %v)", ch.Action, tc.action, ch.Fields)
			}
			if d := cmp.Diff(tc.add, ch.Adds()); d != "" && len(tc.add)+len(ch.Adds()) > 0 {
				t.Errorf("adds (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.remove, ch.Removes()); d != "" && len(tc.remove)+len(ch.Removes()) > 0 {
				t.Errorf("removes (-want +got):\n%s", d)
			}
			if tc.field != "" && !contains(ch.Fields, tc.field) {
				t.Errorf("fields %q do not include %q", ch.Fields, tc.field)
			}
		})
	}
}

// An interrupted replacement (new nodes made, old ones not yet gone) is
// finished, not started over.
func TestPlanFinishesAnInterruptedReplacement(t *testing.T) {
	const pool = `{name: gpu, machine: {cpu: 8, memory: 32Gi}, count: 2, taints: ["gpu=new:NoSchedule"]}`
	bp := testBlueprint(t, pool)
	oldBP := testBlueprint(t, strings.Replace(pool, "new", "old", 1))
	have := append(live(oldBP, 1, 2), live(bp, 2, 1)...) // one new node made before the stop
	ch, err := planPool(bp, &bp.Spec.Pools[1], have, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Action != Replace || !cmp.Equal(ch.Adds(), []string{"gpu-g2-1"}) || !cmp.Equal(ch.Removes(), []string{"gpu-0", "gpu-1"}) {
		t.Errorf("plan = %s adds %v removes %v, want replace adding gpu-g2-1 and removing gpu-0, gpu-1", ch.Action, ch.Adds(), ch.Removes())
	}
}

// A pod no controller would recreate, or one that tolerates only the old
// taint, blocks the replacement before it starts.
func TestBlockers(t *testing.T) {
	bp := testBlueprint(t, `{name: gpu, machine: {cpu: 8, memory: 32Gi}, count: 1, taints: ["gpu=new:NoSchedule"]}`)
	nodes := []corev1.Node{*newNode(bp, &bp.Spec.Pools[1], 1, 0)}
	nodes[0].Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "old", Effect: corev1.TaintEffectNoSchedule}}
	ch, err := planPool(bp, &bp.Spec.Pools[1], []*corev1.Node{&nodes[0]}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	owned := corev1.Pod{}
	owned.Namespace, owned.Name = "ns", "web-1"
	owned.OwnerReferences = append(owned.OwnerReferences, ownerRef("ReplicaSet", "web", &yes))
	owned.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "old", Effect: corev1.TaintEffectNoSchedule}}
	owned.UID = "web-1"
	bare := corev1.Pod{}
	bare.Namespace, bare.Name = "ns", "debug"
	changes := []Change{*ch}
	// The fit is the simulation's (simulate.FitAfter); here, its answer.
	fit := func(_ context.Context, final []*corev1.Node, staying, displaced []*corev1.Pod) (map[types.UID]map[string]string, error) {
		if len(displaced) != 1 || displaced[0] != &owned || len(final) != 1 || final[0].Name != "gpu-g2-0" {
			t.Errorf("fit asked about %d pods on %d nodes", len(displaced), len(final))
		}
		return map[types.UID]map[string]string{"web-1": {"gpu-g2-0": "it does not tolerate the taint gpu=new:NoSchedule"}}, nil
	}
	if err := block(context.Background(), changes, nodes, map[string][]*corev1.Pod{"gpu-0": {&owned, &bare}}, fit); err != nil {
		t.Fatal(err)
	}
	got := changes[0].Blockers.Error()
	for _, want := range []string{"pod ns/debug on gpu-0 has no controller", "ReplicaSet ns/web: 1 pod(s) would have nowhere to run", "does not tolerate the taint gpu=new:NoSchedule"} {
		if !strings.Contains(got, want) {
			t.Errorf("blockers %q do not say %q", got, want)
		}
	}
}

func ownerRef(kind, name string, controller *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(name), Controller: controller}
}

// A pool's Kubernetes version changes blue/green, as seed 001 upgrades
// a cloud's pools: new nodes at the new version, the old ones drained.
func TestPlanVersionChange(t *testing.T) {
	n, ok := v1alpha1.MinorOf(v1alpha1.ControlPlaneVersion())
	if !ok {
		t.Fatalf("no embedded version: %q", v1alpha1.ControlPlaneVersion())
	}
	const pool = `{name: web, kubernetesVersion: "%s", machine: {cpu: 8, memory: 32Gi}, count: 2}`
	older := testBlueprint(t, fmt.Sprintf(pool, fmt.Sprintf("1.%d", n-1)))
	newer := testBlueprint(t, strings.Replace(pool, `kubernetesVersion: "%s", `, "", 1)) // the default: the control plane's
	from, to := fmt.Sprintf("v1.%d.0", n-1), v1alpha1.ControlPlaneVersion()
	if got := live(older, 1, 1)[0].Status.NodeInfo.KubeletVersion; got != from {
		t.Fatalf("a 1.%d pool's node reports kubelet %s, want %s", n-1, got, from)
	}

	ch, err := planPool(newer, &newer.Spec.Pools[1], live(older, 1, 2), map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	want := Change{Pool: "web", Action: Replace, From: 2, To: 2, Fields: []string{"kubernetes version: " + from + " → " + to}, FromVersion: from, ToVersion: to}
	if d := cmp.Diff(want, *ch, cmpopts.IgnoreUnexported(Change{})); d != "" {
		t.Errorf("change (-want +got):\n%s", d)
	}
	if !cmp.Equal(ch.Adds(), []string{"web-g2-0", "web-g2-1"}) || !cmp.Equal(ch.Removes(), []string{"web-0", "web-1"}) {
		t.Errorf("adds %v removes %v, want web-g2-0, web-g2-1 for web-0, web-1", ch.Adds(), ch.Removes())
	}

	// Stopped after one new node: finishing keeps the versions.
	ch, err = planPool(newer, &newer.Spec.Pools[1], append(live(older, 1, 2), live(newer, 2, 1)...), map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Action != Replace || ch.FromVersion != from || ch.ToVersion != to || !cmp.Equal(ch.Adds(), []string{"web-g2-1"}) {
		t.Errorf("finishing: %s %s → %s adds %v, want replace %s → %s adding web-g2-1", ch.Action, ch.FromVersion, ch.ToVersion, ch.Adds(), from, to)
	}

	// Nodes made before pools had versions report KWOK's; they are not
	// replaced for it.
	have := live(newer, 1, 2)
	for _, node := range have {
		node.Status.NodeInfo.KubeletVersion = "kwok-v0.8.0"
	}
	if ch, err := planPool(newer, &newer.Spec.Pools[1], have, map[string]string{}); err != nil || ch != nil {
		t.Errorf("nodes without a berth version: change %+v, %v; want none", ch, err)
	}
}
