package pools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/api/v1alpha1"
)

// Labels that describe a node's machine. A change to any of them cannot
// be made to a running node: the pool is replaced.
var machineLabels = []string{
	corev1.LabelInstanceTypeStable,
	v1alpha1.LabelMode,
	v1alpha1.LabelCapacity,
	corev1.LabelOSStable,
	v1alpha1.LabelGPUProduct,
	v1alpha1.LabelGPUCount,
}

// replaceFields lists what differs between a live node and the node its
// pool now describes that no cloud changes in place (AKS, for one, sets
// taints, VM size, spot and zones only when a pool is created). Each
// entry reads "what: old → new".
func replaceFields(live, want *corev1.Node, p *v1alpha1.Pool) []string {
	var out []string
	if a, b := taintStrings(live.Spec.Taints), taintStrings(want.Spec.Taints); a != b {
		out = append(out, fmt.Sprintf("taints: %s → %s", a, b))
	}
	if a, b := liveVersion(live), want.Status.NodeInfo.KubeletVersion; a != "" && a != b {
		out = append(out, fmt.Sprintf("%s%s → %s", versionField, a, b))
	}
	for _, k := range machineLabels {
		if a, b := live.Labels[k], want.Labels[k]; a != b {
			out = append(out, fmt.Sprintf("label %s: %s → %s", k, orNone(a), orNone(b)))
		}
	}
	// A machine's devices (its GPUs) are in its capacity only while its
	// device plugin runs, so their presence says nothing of the machine:
	// the GPU labels above carry their count, and the devices
	// annotation (on nodes that have one) their resource.
	devices, _ := ParseResources(want.Annotations[v1alpha1.AnnotationDevices])
	if a, ok := live.Annotations[v1alpha1.AnnotationDevices]; ok && a != want.Annotations[v1alpha1.AnnotationDevices] {
		out = append(out, fmt.Sprintf("devices: %s → %s", orNone(a), orNone(want.Annotations[v1alpha1.AnnotationDevices])))
	}
	for _, name := range capacityNames(live, want) {
		if _, ok := devices[name]; ok {
			continue
		}
		a, aok := live.Status.Capacity[name]
		b, bok := want.Status.Capacity[name]
		if aok != bok || a.Cmp(b) != 0 {
			out = append(out, fmt.Sprintf("capacity %s: %s → %s", name, quantity(a, aok), quantity(b, bok)))
		}
	}
	if zone := live.Labels[corev1.LabelTopologyZone]; !contains(p.Zones, zone) {
		out = append(out, fmt.Sprintf("zone %s is no longer one of %s", orNone(zone), strings.Join(p.Zones, ", ")))
	}
	return out
}

// versionField begins the replaceFields entry of a version change.
const versionField = "kubernetes version: "

// liveVersion is the kubelet version a live node reports, or "" when it
// reports none berth wrote (nodes made before pools had versions say
// KWOK's own), which is never a reason to replace it.
func liveVersion(n *corev1.Node) string {
	v := n.Status.NodeInfo.KubeletVersion
	if _, ok := v1alpha1.MinorOf(v); !ok || !strings.HasPrefix(v, "v") {
		return ""
	}
	return v
}

// updateFields lists what can change on a running node: the pool's own
// labels and the system reservation.
func updateFields(live, want *corev1.Node) []string {
	var out []string
	keys := map[string]bool{}
	for _, k := range splitKeys(live.Annotations[v1alpha1.AnnotationPoolLabels]) {
		keys[k] = true
	}
	for _, k := range splitKeys(want.Annotations[v1alpha1.AnnotationPoolLabels]) {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(boolKeys(keys))) {
		a, aok := live.Labels[k]
		b, bok := want.Labels[k]
		if aok != bok || a != b {
			out = append(out, fmt.Sprintf("label %s: %s → %s", k, present(a, aok), present(b, bok)))
		}
	}
	if live.Labels[v1alpha1.LabelBlueprint] != want.Labels[v1alpha1.LabelBlueprint] {
		out = append(out, fmt.Sprintf("label %s: %s → %s", v1alpha1.LabelBlueprint, orNone(live.Labels[v1alpha1.LabelBlueprint]), want.Labels[v1alpha1.LabelBlueprint]))
	}
	if a, b := live.Annotations[v1alpha1.AnnotationSystemReserved], want.Annotations[v1alpha1.AnnotationSystemReserved]; a != b {
		out = append(out, fmt.Sprintf("reserved: %s → %s", orNone(a), orNone(b)))
	}
	return out
}

// capacityNames are the resources compared between two nodes: all but
// ephemeral storage and huge pages, which berth does not model.
func capacityNames(a, b *corev1.Node) []corev1.ResourceName {
	seen := map[corev1.ResourceName]bool{}
	for _, n := range []*corev1.Node{a, b} {
		for name := range n.Status.Capacity {
			if name == corev1.ResourceEphemeralStorage || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				continue
			}
			seen[name] = true
		}
	}
	out := make([]corev1.ResourceName, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// taintStrings writes a node's own taints (not those Kubernetes adds for
// conditions such as unschedulable or not-ready) as a sorted list.
func taintStrings(taints []corev1.Taint) string {
	var s []string
	for _, t := range taints {
		if isSystemTaint(t.Key) {
			continue
		}
		s = append(s, v1alpha1.TaintString(t))
	}
	if len(s) == 0 {
		return "(none)"
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// isSystemTaint is a taint Kubernetes or the autoscaler puts on a node
// for a while (not ready, being removed), never the pool's own.
func isSystemTaint(key string) bool {
	return strings.HasPrefix(key, "node.kubernetes.io/") || strings.HasPrefix(key, "node.cloudprovider.kubernetes.io/") ||
		key == v1alpha1.TaintToBeDeleted || key == v1alpha1.TaintDeletionCandidate
}

func quantity(q resource.Quantity, ok bool) string {
	if !ok {
		return "(none)"
	}
	return q.String()
}

func present(v string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return v
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func splitKeys(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func boolKeys(m map[string]bool) map[string]string {
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = ""
	}
	return out
}

// metadataPatch is the merge patch that gives live want's pool labels,
// blueprint label and reservation, removing pool labels it no longer has.
func metadataPatch(live, want *corev1.Node) []byte {
	labels := map[string]any{}
	for _, k := range splitKeys(live.Annotations[v1alpha1.AnnotationPoolLabels]) {
		labels[k] = nil
	}
	for _, k := range splitKeys(want.Annotations[v1alpha1.AnnotationPoolLabels]) {
		labels[k] = want.Labels[k]
	}
	labels[v1alpha1.LabelBlueprint] = want.Labels[v1alpha1.LabelBlueprint]
	patch := map[string]any{"metadata": map[string]any{
		"labels": labels,
		"annotations": map[string]any{
			v1alpha1.AnnotationPoolLabels:     want.Annotations[v1alpha1.AnnotationPoolLabels],
			v1alpha1.AnnotationSystemReserved: want.Annotations[v1alpha1.AnnotationSystemReserved],
		},
	}}
	b, _ := json.Marshal(patch) // maps of strings always marshal
	return b
}
