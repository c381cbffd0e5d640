package autoscaler

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/objtest"
)

// A pool without autoscale is never resized by the autoscaler, whatever
// its nodes. Its bounds are its count (3), not the nodes it has left:
// with two of its three nodes gone, as a spot interruption takes them,
// a pod waiting for it adds none back and is told it is a fixed pool of
// 3; its idle node is not removed; and the status ConfigMap lists only
// the autoscaled pools, as cluster-autoscaler lists only the node groups
// it manages.
func TestFixedPoolIsNeverResized(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, `  zones: [zone-1]
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: fixed, machine: {cpu: 4, memory: 16Gi}, count: 3}
  - {name: cpu, machine: {cpu: 4, memory: 16Gi}, autoscale: {min: 1, max: 3}}
`, 1)
	for _, name := range []string{"fixed-1", "fixed-2"} {
		if err := w.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Each pod takes a whole node's worth: one fits fixed-0, one waits.
	pending := pendingPods("web", 2, func(p *objtest.PodWrapper) *objtest.PodWrapper {
		return p.CPU("3").NodeSelector(v1alpha1.LabelPool, "fixed")
	})
	w.add(pending...)

	want := castatus.NotTriggered{Pool: "fixed", Reason: castatus.NotAutoscaled + " (a fixed pool of 3)"}
	why := reasons(t, w, pending)
	if !slices.Contains(why["web-1"], want) {
		t.Errorf("reasons for the waiting pod %v; want %v", why["web-1"], want)
	}
	v, up := scaleUp(t, w)
	if up || w.group(v, "fixed").target() != 1 {
		t.Errorf("the fixed pool was scaled up (target %d)", w.group(v, "fixed").target())
	}

	w.pods = nil // fixed-0 idle, as are the cpu pool's nodes
	w.profile().ScaleDownUnneededTime = &metav1.Duration{}
	scaleDown(t, w)
	scaleDown(t, w)
	if got := w.nodeNames("fixed"); !slices.Equal(got, []string{"fixed-0"}) {
		t.Errorf("fixed pool nodes %v after scale-down; want fixed-0 kept", got)
	}

	v = w.view()
	if err := w.c.publish(ctx, v); err != nil {
		t.Fatal(err)
	}
	cm, err := w.client.CoreV1().ConfigMaps(castatus.ConfigMapNamespace).Get(ctx, castatus.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, act, err := castatus.Read(cm)
	if err != nil {
		t.Fatal(err)
	}
	var groups, pools []string
	for _, g := range st.NodeGroups {
		groups = append(groups, g.Name)
	}
	for _, p := range act.Pools {
		pools = append(pools, p.Name)
	}
	if !slices.Equal(groups, []string{"cpu"}) || !slices.Equal(pools, []string{"cpu"}) {
		t.Errorf("published node groups %v and pools %v; want only the autoscaled pool cpu", groups, pools)
	}
	if n := st.ClusterWide.Health.NodeCounts.Registered.Total; n != len(w.nodeNames("cpu")) {
		t.Errorf("cluster-wide registered nodes %d; want the cpu pool's %d", n, len(w.nodeNames("cpu")))
	}
}
