package why

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// stage is one of the scheduler's filters, in the order it runs them
// (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit,
// PodTopologySpread); stageFits passes them all.
type stage int

const (
	stageCordoned stage = iota + 1
	stageTaints
	stageAffinity
	stageResources
	stageSpread
	stageFits
)

func (s stage) String() string {
	return [...]string{"", "cordoned", "taints", "affinity", "resources", "spread", "fits"}[s]
}

// check is one pod against nodes.
type check struct {
	snap     *Snapshot
	pod      *corev1.Pod
	requests corev1.ResourceList
	priority int32
	affinity nodeaffinity.RequiredNodeAffinity
	spread   []*spreadConstraint
}

func newCheck(s *Snapshot, pod *corev1.Pod) *check {
	c := &check{
		snap:     s,
		pod:      pod,
		requests: podRequests(pod),
		priority: corev1helpers.PodPriority(pod),
		affinity: nodeaffinity.GetRequiredNodeAffinity(pod),
	}
	c.spread = newSpread(c)
	return c
}

// nodeFit is how one node fares. Unlike the scheduler, which stops at a
// node's first failing filter, it runs them all: a node that fails one
// filter is closer to holding the pod than one that fails three.
type nodeFit struct {
	info     *nodeInfo
	cordoned bool
	taints   []corev1.Taint
	unmet    []unmet
	short    []shortage
	spread   []spreadMiss
	// reserved counts pods nominated to the node, of at least the pod's
	// priority, whose requests the scheduler holds for them.
	reserved int
}

// first is the filter the scheduler would report for the node.
func (f *nodeFit) first() stage {
	switch {
	case f.cordoned:
		return stageCordoned
	case len(f.taints) > 0:
		return stageTaints
	case len(f.unmet) > 0:
		return stageAffinity
	case len(f.short) > 0:
		return stageResources
	case len(f.spread) > 0:
		return stageSpread
	}
	return stageFits
}

func (f *nodeFit) failures() int {
	n := 0
	for _, failed := range []bool{f.cordoned, len(f.taints) > 0, len(f.unmet) > 0, len(f.short) > 0, len(f.spread) > 0} {
		if failed {
			n++
		}
	}
	return n
}

// tooSmall is true when some resource exceeds the node's allocatable:
// the node could not hold the pod even empty.
func (f *nodeFit) tooSmall() bool {
	for _, s := range f.short {
		if s.requested.Cmp(s.allocatable) > 0 {
			return true
		}
	}
	return false
}

// closer orders nodes by how near they are to holding the pod: big
// enough first, then fewer failing filters, then a later first failure
// in the scheduler's order, except that a cordon, which maintenance
// lifts, counts as nearer than a taint or a selector, which do not.
func closer(a, b *nodeFit) bool {
	if a.tooSmall() != b.tooSmall() {
		return !a.tooSmall()
	}
	if a.failures() != b.failures() {
		return a.failures() < b.failures()
	}
	return nearness(a.first()) > nearness(b.first())
}

func nearness(s stage) int {
	if s == stageCordoned {
		return int(stageAffinity) + 1
	}
	if s > stageAffinity {
		return int(s) + 1
	}
	return int(s)
}

func sameRank(a, b *nodeFit) bool { return !closer(a, b) && !closer(b, a) }

// unmet is one part of the node selector or required node affinity the
// node's labels do not satisfy.
type unmet struct {
	// what is the requirement as the pod writes it.
	what string
	// key is the label (or field) it is about.
	key string
}

// shortage is one resource the node lacks.
type shortage struct {
	name                         corev1.ResourceName
	requested, free, allocatable resource.Quantity
}

var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

func (c *check) fit(n *nodeInfo) nodeFit {
	f := nodeFit{info: n}
	node := n.node
	f.cordoned = node.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(klog.Background(), c.pod.Spec.Tolerations, &unschedulableTaint, false)
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if f.cordoned && t.Key == corev1.TaintNodeUnschedulable {
			continue // said once, as the cordon
		}
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), c.pod.Spec.Tolerations, t, false) {
			f.taints = append(f.taints, *t)
		}
	}
	if ok, _ := c.affinity.Match(node); !ok {
		f.unmet = unmetOn(c.pod, node)
	}
	used, pods := c.used(n, &f)
	f.short = shortages(c.requests, node.Status.Allocatable, used, pods)
	f.spread = c.spreadMisses(node)
	return f
}

// used is what the node's pods request, plus the pods nominated to it
// with at least this pod's priority (the scheduler keeps their room).
func (c *check) used(n *nodeInfo, f *nodeFit) (corev1.ResourceList, int) {
	nominated := c.snap.index().nominated[n.node.Name]
	if len(nominated) == 0 {
		return n.requested, len(n.pods)
	}
	used := n.requested.DeepCopy()
	pods := len(n.pods)
	for _, p := range nominated {
		if p.UID == c.pod.UID || corev1helpers.PodPriority(p) < c.priority {
			continue
		}
		addList(used, podRequests(p))
		pods++
		f.reserved++
	}
	return used, pods
}

// shortages is what NodeResourcesFit finds lacking: room for one more
// pod, and each resource the pod requests beyond allocatable less what
// is already requested.
func shortages(req, alloc, used corev1.ResourceList, pods int) []shortage {
	var out []shortage
	if allowed := alloc.Pods().Value(); int64(pods)+1 > allowed {
		out = append(out, shortage{
			name:        corev1.ResourcePods,
			requested:   *resource.NewQuantity(1, resource.DecimalSI),
			free:        *resource.NewQuantity(max(allowed-int64(pods), 0), resource.DecimalSI),
			allocatable: *resource.NewQuantity(allowed, resource.DecimalSI),
		})
	}
	for _, name := range sortedResourceNames(req) {
		q := req[name]
		if q.Sign() <= 0 || name == corev1.ResourcePods {
			continue
		}
		a := alloc[name]
		free := a.DeepCopy()
		free.Sub(used[name])
		if q.Cmp(free) > 0 {
			out = append(out, shortage{name: name, requested: q, free: free, allocatable: a})
		}
	}
	return out
}

// unmetOn names the node selector entries and node affinity
// requirements the node does not satisfy.
func unmetOn(pod *corev1.Pod, node *corev1.Node) []unmet {
	var out []unmet
	keys := make([]string, 0, len(pod.Spec.NodeSelector))
	for k := range pod.Spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := node.Labels[k]; !ok || v != pod.Spec.NodeSelector[k] {
			out = append(out, unmet{what: "nodeSelector " + k + "=" + pod.Spec.NodeSelector[k], key: k})
		}
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return out
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var perTerm []unmet
	for _, term := range terms {
		ok := true
		for _, r := range term.MatchExpressions {
			if !matches(node, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{r}}) {
				perTerm = append(perTerm, unmet{what: "node affinity " + requirement(r), key: r.Key})
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, r := range term.MatchFields {
			if !matches(node, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{r}}) {
				perTerm = append(perTerm, unmet{what: "node affinity field " + requirement(r), key: r.Key})
				ok = false
				break
			}
		}
		if ok {
			return out // one term holds: the affinity is met
		}
	}
	if len(perTerm) > 1 {
		whats := make([]string, len(perTerm))
		for i, u := range perTerm {
			whats[i] = strings.TrimPrefix(u.what, "node affinity ")
		}
		return append(out, unmet{what: "node affinity (any of) " + strings.Join(whats, " | "), key: perTerm[0].key})
	}
	return append(out, perTerm...)
}

func matches(node *corev1.Node, term corev1.NodeSelectorTerm) bool {
	ok, _ := nodeaffinity.NewLazyErrorNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}).Match(node)
	return ok
}

func requirement(r corev1.NodeSelectorRequirement) string {
	switch r.Operator {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return fmt.Sprintf("%s %s", r.Key, r.Operator)
	default:
		return fmt.Sprintf("%s %s [%s]", r.Key, r.Operator, strings.Join(r.Values, ", "))
	}
}
