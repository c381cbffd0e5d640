package audit

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Where a pod may run is the scheduler's answer, not berth's: every
// match below is nodeaffinity's, the code the NodeAffinity plugin runs,
// so NotIn, DoesNotExist, Gt, Lt and matchFields mean what they mean to
// the scheduler. berth decides only which nodes to ask about.

// selectsOnly reports whether the pod's node selector and required node
// affinity leave it only the audited nodes of the pools in set, and the
// field that does (nodeSelector when it does so alone). known is false
// when the audited nodes cannot say: no node outside set was audited, or
// the pod matches none of them (it selects by labels the audited nodes
// do not carry); selects then decides by labels.
func (v *view) selectsOnly(spec *corev1.PodSpec, set map[string]bool) (field string, ok, known bool) {
	if !constrained(spec) {
		return "", false, true
	}
	in, out, outside := false, false, false
	only := func(pod *corev1.Pod) bool {
		affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
		in, out, outside = false, false, false
		for _, p := range v.pools {
			for _, n := range p.all() {
				outside = outside || !set[p.name]
				if match, _ := affinity.Match(n); match && set[p.name] {
					in = true
				} else if match {
					out = true
				}
			}
		}
		return in && !out
	}
	if !only(&corev1.Pod{Spec: *spec}) {
		return "", false, outside && (in || out)
	}
	if len(spec.NodeSelector) > 0 && only(&corev1.Pod{Spec: corev1.PodSpec{NodeSelector: spec.NodeSelector}}) {
		return "nodeSelector", true, true
	}
	return "affinity.nodeAffinity", true, true
}

// constrained reports whether the pod says anything about its nodes.
func constrained(spec *corev1.PodSpec) bool {
	a := spec.Affinity
	return len(spec.NodeSelector) > 0 || a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
}

// selects reports whether an entry of the pod's node selector, or a
// requirement of its required node affinity, picks nodes by one of keys:
// it refuses a node without the label, and (when values is not nil)
// accepts one labelled with a value in values. It asks each requirement
// alone, of nodes made to show what it wants, for manifests audited
// without the nodes they would run on.
func selects(spec *corev1.PodSpec, keys []string, values map[string]bool) (string, bool) {
	for _, k := range keys {
		if val, ok := spec.NodeSelector[k]; ok && picks(corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{val}}, values) {
			return "nodeSelector", true
		}
	}
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", false
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			for _, k := range keys {
				if e.Key == k && picks(e, values) {
					return "affinity.nodeAffinity", true
				}
			}
		}
	}
	return "", false
}

// picks reports whether requirement r refuses a node without its label
// and, when values is not nil, accepts a node labelled with one of them.
func picks(r corev1.NodeSelectorRequirement, values map[string]bool) bool {
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{r}}}})
	if err != nil || sel.Match(&corev1.Node{}) {
		return false
	}
	if values == nil {
		return true
	}
	for val := range values {
		if sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{r.Key: val}}}) {
			return true
		}
	}
	return false
}
