package why

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"berth.io/berth/internal/words"
)

// spreadConstraint is one DoNotSchedule TopologySpreadConstraint with
// its matching pods counted per domain, for the numbers of a message
// once PodTopologySpread has rejected a node: the verdict is the
// plugin's, but the plugin keeps its counts in unexported cycle state,
// so berth counts again, as its PreFilter counts: over the nodes that
// carry every constraint's key and pass its node inclusion policies
// (node affinity honoured and taints ignored, unless the constraint says
// otherwise; both matched by component-helpers, as the plugin matches
// them), pods of the pod's namespace that match the selector and are not
// terminating. TestSpreadCountsAgreeWithThePlugin holds the two to the
// same nodes.
type spreadConstraint struct {
	c        corev1.TopologySpreadConstraint
	selector labels.Selector
	counts   map[string]int
	// min is the emptiest domain's count (0 when fewer domains than
	// minDomains), minDomain that domain.
	min       int
	minDomain string
	self      int
}

// spreadMiss is why a node fails one constraint.
type spreadMiss struct {
	key     string
	missing bool
	domain  string
	// matching is the domain's matching pods; skew what placing the pod
	// there would make it.
	matching, skew int
	sc             *spreadConstraint
	// scheduler is set when the counts do not show the skew: key is
	// then the plugin's own reason.
	scheduler bool
}

func newSpread(c *check) []*spreadConstraint {
	var out []*spreadConstraint
	for _, tsc := range c.pod.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
		if err != nil {
			continue
		}
		for _, k := range tsc.MatchLabelKeys {
			if v, ok := c.pod.Labels[k]; ok {
				if r, err := labels.NewRequirement(k, selection.Equals, []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		sc := &spreadConstraint{c: tsc, selector: sel, counts: map[string]int{}}
		if sel.Matches(labels.Set(c.pod.Labels)) {
			sc.self = 1
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil
	}
	for _, n := range c.snap.index().nodes {
		if !hasKeys(n.node, out) {
			continue
		}
		for _, sc := range out {
			if !sc.includes(c, n.node) {
				continue
			}
			domain := n.node.Labels[sc.c.TopologyKey]
			sc.counts[domain] += countMatching(n.pods, sc.selector, c.pod.Namespace)
		}
	}
	for _, sc := range out {
		domains := make([]string, 0, len(sc.counts))
		for d := range sc.counts {
			domains = append(domains, d)
		}
		sort.Strings(domains)
		for i, d := range domains {
			if i == 0 || sc.counts[d] < sc.min {
				sc.min, sc.minDomain = sc.counts[d], d
			}
		}
		if sc.c.MinDomains != nil && len(domains) < int(*sc.c.MinDomains) {
			sc.min, sc.minDomain = 0, ""
		}
	}
	return out
}

func hasKeys(n *corev1.Node, constraints []*spreadConstraint) bool {
	for _, sc := range constraints {
		if _, ok := n.Labels[sc.c.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

func (sc *spreadConstraint) includes(c *check, n *corev1.Node) bool {
	if sc.c.NodeAffinityPolicy == nil || *sc.c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
		if ok, _ := c.affinity.Match(n); !ok {
			return false
		}
	}
	if sc.c.NodeTaintsPolicy != nil && *sc.c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, c.pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); untolerated {
			return false
		}
	}
	return true
}

func countMatching(pods []*corev1.Pod, sel labels.Selector, namespace string) int {
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Namespace == namespace && sel.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// spreadMisses are the constraints the node fails: it lacks the key, or
// placing the pod there would skew its domain past maxSkew.
func (c *check) spreadMisses(n *corev1.Node) []spreadMiss {
	var out []spreadMiss
	for _, sc := range c.spread {
		domain, ok := n.Labels[sc.c.TopologyKey]
		if !ok {
			out = append(out, spreadMiss{key: sc.c.TopologyKey, missing: true, sc: sc})
			continue
		}
		matching := sc.counts[domain]
		if skew := matching + sc.self - sc.min; skew > int(sc.c.MaxSkew) {
			out = append(out, spreadMiss{key: sc.c.TopologyKey, domain: domain, matching: matching, skew: skew, sc: sc})
		}
	}
	return out
}

func (m spreadMiss) String() string {
	if m.scheduler {
		return "topology spread: " + m.key
	}
	if m.missing {
		return fmt.Sprintf("topology spread over %s: the node has no %s label", m.key, m.key)
	}
	empty := ""
	if m.sc.minDomain != "" {
		empty = fmt.Sprintf(", %s has %d", m.sc.minDomain, m.sc.min)
	} else {
		empty = fmt.Sprintf(", fewer domains than minDomains %d count as 0", *m.sc.c.MinDomains)
	}
	return fmt.Sprintf("topology spread over %s: %s has %s%s; placing the pod there makes skew %d > maxSkew %d",
		m.key, m.domain, words.Count(m.matching, "matching pod"), empty, m.skew, m.sc.c.MaxSkew)
}
