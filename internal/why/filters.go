package why

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"

	"berth.io/berth/internal/simulate"
)

// stage is what a node fails on, in the order the scheduler runs its
// Filter plugins (NodeUnschedulable, TaintToleration, NodeAffinity,
// NodeResourcesFit, PodTopologySpread); stageOther is any other plugin
// (NodeName, NodePorts, VolumeRestrictions, InterPodAffinity), and
// stageFits passes them all.
type stage int

const (
	stageCordoned stage = iota + 1
	stageTaints
	stageAffinity
	stageResources
	stageSpread
	stageOther
	stageFits
)

func (s stage) String() string {
	return [...]string{"", "cordoned", "taints", "affinity", "resources", "spread", "other", "fits"}[s]
}

// check is one pod against the scheduler's simulation of the nodes.
type check struct {
	snap     *Snapshot
	pod      *corev1.Pod
	requests corev1.ResourceList
	priority int32
	affinity nodeaffinity.RequiredNodeAffinity
	spread   []*spreadConstraint
	// diags are the Filter plugins' verdicts on every node, by name.
	diags map[string]*simulate.Diagnosis
	err   error
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
	c.diagnose()
	return c
}

// diagnose runs every Filter plugin of the scheduler for the pod on
// every node, with the pods nominated to a node that this pod must leave
// room for counted there.
func (c *check) diagnose() {
	ix := c.snap.index()
	if ix.simErr != nil {
		c.err = ix.simErr
		return
	}
	key, shared := equivalenceKey(c.pod)
	if shared {
		ix.mu.Lock()
		d, ok := ix.diagnoses[key]
		ix.mu.Unlock()
		if ok && (d.diags != nil || d.err != nil) {
			c.diags, c.err = d.diags, d.err
			return
		}
		defer func() {
			ix.mu.Lock()
			d := ix.diagnoses[key]
			d.diags, d.err = c.diags, c.err
			ix.diagnoses[key] = d
			ix.mu.Unlock()
		}()
	}
	var nominated []simulate.Placement
	for node, pods := range ix.nominated {
		for _, p := range pods {
			if p.UID != c.pod.UID && corev1helpers.PodPriority(p) >= c.priority {
				nominated = append(nominated, simulate.Placement{Pod: p, Node: node})
			}
		}
	}
	ds, err := ix.sim.Diagnose(context.Background(), c.pod, nominated)
	if err != nil {
		c.err = err
		return
	}
	c.diags = make(map[string]*simulate.Diagnosis, len(ds))
	for i := range ds {
		c.diags[ds[i].Node.Name] = &ds[i]
	}
}

// diagnosis is the Filter plugins' verdicts on every node for pods of one
// equivalence class.
type diagnosis struct {
	diags map[string]*simulate.Diagnosis
	err   error
	// pools are the nodes' verdicts grouped by pool (check.pools), read
	// only once made, and the error making them met.
	pools    []*poolResult
	poolsErr error
}

// equivalenceKey names the pods the Filter plugins cannot tell apart: the
// same namespace, labels and spec, but for the name of the volume that
// carries the service account's token, which the API server draws at
// random for each pod. A Deployment's pending replicas share one key, so
// `why --all` runs the plugins over the nodes once for all of them, as
// cluster-autoscaler groups equivalent pods. A pod nominated to a node is
// its own class: the other nominated pods it must leave room for are not
// the same as theirs.
func equivalenceKey(pod *corev1.Pod) (string, bool) {
	if pod.Status.NominatedNodeName != "" {
		return "", false
	}
	spec, err := json.Marshal(&pod.Spec)
	if err != nil {
		return "", false
	}
	labels, err := json.Marshal(pod.Labels)
	if err != nil {
		return "", false
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil && strings.HasPrefix(v.Name, tokenVolumePrefix) {
			spec = bytes.ReplaceAll(spec, []byte(strconv.Quote(v.Name)), []byte(`"`+tokenVolumePrefix+`"`))
		}
	}
	return pod.Namespace + "\x00" + string(labels) + "\x00" + string(spec), true
}

// tokenVolumePrefix begins the name of the projected volume the
// ServiceAccount admission plugin adds to every pod, kube-api-access-XXXXX.
const tokenVolumePrefix = "kube-api-access-"

// nodeFit is how one node fares: every Filter plugin that rejects the
// pod there, with the details that explain it.
type nodeFit struct {
	info *nodeInfo
	// failures are the plugins' own verdicts.
	failed []simulate.Failure
	// stages are the node's failures in the scheduler's order.
	stages   []stage
	cordoned bool
	// taints are the node's untolerated taints, when TaintToleration
	// rejects the pod.
	taints []corev1.Taint
	// unmet are the parts of the node selector or affinity NodeAffinity
	// found unmatched.
	unmet []unmet
	// short is what NodeResourcesFit found lacking, with its numbers.
	short []shortage
	// spread is why PodTopologySpread rejects the pod.
	spread []spreadMiss
	// other are the other plugins' rejections, in their words.
	other []simulate.Failure
}

// first is the filter the scheduler reports for the node.
func (f *nodeFit) first() stage {
	if len(f.stages) == 0 {
		return stageFits
	}
	return f.stages[0]
}

// firstName is first as PoolFit.Stage shows it: another plugin by its
// own name.
func (f *nodeFit) firstName() string {
	if f.first() == stageOther {
		return f.other[0].Plugin
	}
	return f.first().String()
}

func (f *nodeFit) failures() int { return len(f.stages) }

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

// fit is the node's verdict, from the simulation.
func (c *check) fit(n *nodeInfo) nodeFit {
	d := c.diags[n.node.Name]
	if d == nil {
		return nodeFit{info: n}
	}
	return c.fitOf(n, d)
}

// fitOf explains a Diagnosis: the plugins' verdicts are the
// scheduler's; the details (which taint, which selector entry, how much
// is free) say what to change.
func (c *check) fitOf(n *nodeInfo, d *simulate.Diagnosis) nodeFit {
	f := nodeFit{info: n, failed: d.Failures}
	node := d.Node
	for _, fl := range d.Failures {
		switch fl.Plugin {
		case names.NodeUnschedulable:
			f.cordoned = true
			f.stages = append(f.stages, stageCordoned)
		case names.TaintToleration:
			f.taints = c.untolerated(node, f.cordoned)
			if len(f.taints) > 0 {
				f.stages = append(f.stages, stageTaints)
			} else if !f.cordoned {
				f.other = append(f.other, fl)
				f.stages = append(f.stages, stageOther)
			} // else: the cordon's own taint, said once as the cordon
		case names.NodeAffinity:
			f.unmet = unmetOn(c.pod, node)
			if len(f.unmet) == 0 {
				f.unmet = []unmet{{what: strings.Join(fl.Reasons, "; ")}}
			}
			f.stages = append(f.stages, stageAffinity)
		case names.NodeResourcesFit:
			f.short = shortages(d.Insufficient)
			f.stages = append(f.stages, stageResources)
		case names.PodTopologySpread:
			f.spread = c.spreadMisses(node)
			if len(f.spread) == 0 {
				f.spread = []spreadMiss{{key: strings.Join(fl.Reasons, "; "), scheduler: true}}
			}
			f.stages = append(f.stages, stageSpread)
		default:
			f.other = append(f.other, fl)
			f.stages = append(f.stages, stageOther)
		}
	}
	// The scheduler's order, with other plugins last: they are rarer.
	sort.SliceStable(f.stages, func(i, j int) bool { return f.stages[i] < f.stages[j] })
	return f
}

// untolerated are the node's NoSchedule and NoExecute taints the pod
// does not tolerate; the cordon's taint is left to the cordon.
func (c *check) untolerated(node *corev1.Node, cordoned bool) []corev1.Taint {
	var out []corev1.Taint
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if cordoned && t.Key == corev1.TaintNodeUnschedulable {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), c.pod.Spec.Tolerations, t, false) {
			out = append(out, *t)
		}
	}
	return out
}

// shortages are NodeResourcesFit's insufficient resources as quantities.
func shortages(in []noderesources.InsufficientResource) []shortage {
	out := make([]shortage, 0, len(in))
	for _, r := range in {
		q := func(v int64) resource.Quantity {
			switch r.ResourceName {
			case corev1.ResourceCPU:
				return *resource.NewMilliQuantity(v, resource.DecimalSI)
			case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
				return *resource.NewQuantity(v, resource.BinarySI)
			}
			return *resource.NewQuantity(v, resource.DecimalSI)
		}
		out = append(out, shortage{name: r.ResourceName, requested: q(r.Requested), free: q(max(r.Capacity-r.Used, 0)), allocatable: q(r.Capacity)})
	}
	return out
}

// unmetOn names the node selector entries and node affinity
// requirements the node does not satisfy: what to change, once
// NodeAffinity has rejected the node.
func unmetOn(pod *corev1.Pod, node *corev1.Node) []unmet {
	var out []unmet
	keys := make([]string, 0, len(pod.Spec.NodeSelector))
	for k := range pod.Spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	nodeLabels := labels.Set(node.Labels)
	for _, k := range keys {
		// Each entry alone, as NodeAffinity matches them all at once.
		if !labels.SelectorFromSet(labels.Set{k: pod.Spec.NodeSelector[k]}).Matches(nodeLabels) {
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
