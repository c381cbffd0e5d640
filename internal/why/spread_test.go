package why

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"berth.io/berth/internal/objtest"
)

// berth counts matching pods per domain itself, for the numbers of a
// message only (PodTopologySpread keeps its counts in unexported state).
// Those numbers must tell the same story as the plugin: a node berth
// finds skewed (or without the key) is a node the plugin rejects, and
// the other way round, over what the counting has to get right: domains
// and minDomains, both inclusion policies, matchLabelKeys, pods of other
// namespaces or terminating, two constraints at once.
func TestSpreadCountsAgreeWithThePlugin(t *testing.T) {
	type tsc = corev1.TopologySpreadConstraint
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	three := int32(3)
	four := int32(4)
	web := func(c tsc) tsc {
		c.WhenUnsatisfiable = corev1.DoNotSchedule
		if c.MaxSkew == 0 {
			c.MaxSkew = 1
		}
		if c.TopologyKey == "" {
			c.TopologyKey = corev1.LabelTopologyZone
		}
		c.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		return c
	}
	running := func(ns, name, node string, labels ...string) corev1.Pod {
		b := objtest.MakePod(ns, name).Label("app", "web").On(node)
		for i := 0; i+1 < len(labels); i += 2 {
			b.Label(labels[i], labels[i+1])
		}
		return *b.Obj()
	}
	terminating := running("ns", "old", "a-1")
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	zones := nodes(poolNode("a-1", "apps").Zone("zone-1"), poolNode("a-2", "apps").Zone("zone-2"), poolNode("a-3", "apps").Zone("zone-3"),
		poolNode("a-4", "apps").Zone("zone-3"), poolNode("g-1", "gpu").Zone("zone-1").Taint("gpu=true:NoSchedule"))
	keyless := *poolNode("k-1", "apps").Obj()
	delete(keyless.Labels, corev1.LabelTopologyZone)

	for _, c := range []struct {
		name        string
		constraints []tsc
		selector    map[string]string
		labels      map[string]string
		pods        []corev1.Pod
		extra       []corev1.Node
		// tolerant pods tolerate the GPU node's taint.
		tolerant bool
		// rejects: the plugin rejects some node (else none).
		rejects bool
	}{
		{name: "one zone ahead", rejects: true, tolerant: true, constraints: []tsc{web(tsc{})}, pods: []corev1.Pod{running("ns", "w-0", "a-3")}},
		{name: "two ahead, maxSkew 2", rejects: true, tolerant: true, constraints: []tsc{web(tsc{MaxSkew: 2})}, pods: []corev1.Pod{running("ns", "w-0", "a-3"), running("ns", "w-1", "a-4"), running("ns", "w-2", "a-2")}},
		{name: "fewer domains than minDomains", rejects: true, tolerant: true, constraints: []tsc{web(tsc{MinDomains: &four})}, pods: []corev1.Pod{running("ns", "w-0", "a-1"), running("ns", "w-1", "a-2"), running("ns", "w-2", "a-3")}},
		{name: "as many domains as minDomains", rejects: false, tolerant: true, constraints: []tsc{web(tsc{MinDomains: &three})}, pods: []corev1.Pod{running("ns", "w-0", "a-1"), running("ns", "w-1", "a-2"), running("ns", "w-2", "a-3")}},
		{name: "affinity honoured", rejects: true, tolerant: true, constraints: []tsc{web(tsc{})}, selector: map[string]string{"berth.io/pool": "apps"}, pods: []corev1.Pod{running("ns", "w-0", "a-2"), running("ns", "w-1", "a-3"), running("ns", "w-2", "g-1")}},
		{name: "affinity ignored", rejects: false, tolerant: true, constraints: []tsc{web(tsc{NodeAffinityPolicy: &ignore})}, selector: map[string]string{"berth.io/pool": "apps"}, pods: []corev1.Pod{running("ns", "w-0", "a-2"), running("ns", "w-1", "a-3"), running("ns", "w-2", "g-1")}},
		{name: "taints honoured", rejects: true, constraints: []tsc{web(tsc{NodeTaintsPolicy: &honor})}, pods: []corev1.Pod{running("ns", "w-0", "a-2"), running("ns", "w-1", "a-3"), running("ns", "w-2", "g-1")}},
		{name: "taints ignored", rejects: false, constraints: []tsc{web(tsc{})}, pods: []corev1.Pod{running("ns", "w-0", "a-2"), running("ns", "w-1", "a-3"), running("ns", "w-2", "g-1")}},
		{name: "matchLabelKeys", rejects: true, tolerant: true, constraints: []tsc{web(tsc{MatchLabelKeys: []string{"rev"}})}, labels: map[string]string{"rev": "2"},
			pods: []corev1.Pod{running("ns", "w-0", "a-3", "rev", "1"), running("ns", "w-1", "a-4", "rev", "1"), running("ns", "w-2", "a-1", "rev", "2")}},
		{name: "other namespace and terminating", rejects: false, tolerant: true, constraints: []tsc{web(tsc{})}, pods: []corev1.Pod{running("other", "w-0", "a-3"), running("other", "w-1", "a-3"), terminating}},
		{name: "a node without the key", rejects: true, tolerant: true, constraints: []tsc{web(tsc{})}, pods: []corev1.Pod{running("ns", "w-0", "a-3")}, extra: []corev1.Node{keyless}},
		{name: "zone and host", rejects: true, tolerant: true, constraints: []tsc{web(tsc{}), web(tsc{TopologyKey: corev1.LabelHostname, MaxSkew: 1})},
			pods: []corev1.Pod{running("ns", "w-0", "a-3"), running("ns", "w-1", "a-1")}},
	} {
		p := objtest.MakePod("ns", "new").Label("app", "web").Labels(c.labels).Obj()
		if c.tolerant {
			p.Spec.Tolerations = []corev1.Toleration{tolerateGPU}
		}
		p.Spec.NodeSelector = c.selector
		p.Spec.TopologySpreadConstraints = c.constraints
		s := snapshotOf(append(append([]corev1.Node(nil), zones...), c.extra...), c.pods...)
		ch := newCheck(s, p)
		if ch.err != nil {
			t.Fatalf("%s: %v", c.name, ch.err)
		}
		rejected := 0
		for name, d := range ch.diags {
			plugin := d.Failed(names.PodTopologySpread) != nil
			misses := ch.spreadMisses(d.Node)
			if plugin != (len(misses) > 0) {
				t.Errorf("%s: on %s PodTopologySpread rejects: %v, berth's counts find %v", c.name, name, plugin, misses)
			}
			if plugin {
				rejected++
			}
		}
		if (rejected > 0) != c.rejects {
			t.Errorf("%s: the plugin rejects %d nodes; want some: %v", c.name, rejected, c.rejects)
		}
	}
}
