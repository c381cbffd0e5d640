package autoscaler

import (
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/simulate"
)

// view is the cluster as one scan sees it.
type view struct {
	now        time.Time
	profile    *v1alpha1.AutoscalerProfile
	groups     []*group
	nodes      []*corev1.Node
	pods       []*corev1.Pod
	budgets    []*policyv1.PodDisruptionBudget
	daemonSets []*appsv1.DaemonSet
	// claims and namespaces are what two Filter plugins look up
	// (VolumeRestrictions, InterPodAffinity's namespace selectors).
	claims     []*corev1.PersistentVolumeClaim
	namespaces []*corev1.Namespace
	// storage is what VolumeZone and NodeVolumeLimits look up: a pod
	// whose volume lives in one zone grows a pool's nodes there only.
	storage *simulate.Storage
	// onNode indexes pods by the node they are bound to, in pods'
	// order; built by podsOn when scale-down first asks.
	onNode map[string][]*corev1.Pod
}

func (v *view) interval() time.Duration { return v.profile.ScanInterval.Duration }

// podsOn are the pods bound to node, finished or not, in v.pods order.
// Scale-down asks once per node of its pools; the index makes that one
// pass over the pods rather than one per node.
func (v *view) podsOn(node string) []*corev1.Pod {
	if v.onNode == nil {
		v.onNode = map[string][]*corev1.Pod{}
		for _, p := range v.pods {
			if p.Spec.NodeName != "" {
				v.onNode[p.Spec.NodeName] = append(v.onNode[p.Spec.NodeName], p)
			}
		}
	}
	return v.onNode[node]
}

// group is one pool: a node group, in cluster-autoscaler's words.
// Pools without autoscale are groups too (their nodes hold pods), but
// never change size.
type group struct {
	bp    *v1alpha1.Blueprint
	pool  *v1alpha1.Pool
	nodes []*corev1.Node
	// upcoming are nodes asked for and not yet registered.
	upcoming []*upcoming
	// backoffUntil holds scale-up back after a failed one.
	backoffUntil time.Time
	backoffWhy   string
	// removing counts nodes being deleted: no longer in the target.
	removing map[string]bool
	lastUp   *castatus.Event
	lastDown *castatus.Event
}

// upcoming is a node being provisioned: it registers (is created in
// the API) at due.
type upcoming struct {
	node      *corev1.Node
	requested time.Time
	due       time.Time
	timer     clock.Timer
	created   bool
}

func (g *group) name() string     { return g.pool.Name }
func (g *group) autoscaled() bool { return g.pool.Autoscale != nil }

// min and max bound the pool: autoscale's bounds, or a fixed pool's
// count (which the autoscaler never changes, whatever its nodes).
func (g *group) min() int { return int(g.pool.MinSize()) }
func (g *group) max() int { return int(g.pool.MaxSize()) }

// target is cluster-autoscaler's target size: registered nodes not
// being removed, plus upcoming ones.
func (g *group) target() int {
	n := len(g.upcoming)
	for _, node := range g.nodes {
		if !g.removing[node.Name] {
			n++
		}
	}
	return n
}

func (g *group) provisioningTime() time.Duration {
	if g.autoscaled() && g.pool.Autoscale.ProvisioningTime != nil {
		return g.pool.Autoscale.ProvisioningTime.Duration
	}
	return 0
}

// arrived forgets upcoming nodes that have registered, and removals
// that are done.
func (g *group) arrived() {
	have := map[string]bool{}
	for _, n := range g.nodes {
		have[n.Name] = true
	}
	g.upcoming = slices.DeleteFunc(g.upcoming, func(u *upcoming) bool { return u.created && have[u.node.Name] })
	for name := range g.removing {
		if !have[name] {
			delete(g.removing, name)
		}
	}
}

// drop gives up on an upcoming node.
func (g *group) drop(u *upcoming) {
	if u.timer != nil {
		u.timer.Stop()
	}
	g.upcoming = slices.DeleteFunc(g.upcoming, func(x *upcoming) bool { return x == u })
}

// cancel gives up on every upcoming node: the pool left the blueprint.
func (g *group) cancel() {
	for _, u := range slices.Clone(g.upcoming) {
		g.drop(u)
	}
}

// next are the n nodes the pool would add after its registered and
// upcoming ones.
func (g *group) next(n int) []*corev1.Node {
	live := slices.Clone(g.nodes)
	for _, u := range g.upcoming {
		live = append(live, u.node)
	}
	return pools.NextNodes(g.bp, g.pool, live, n)
}

// template is the pool's template for simulate.Pack: its next nodes,
// with the DaemonSet pods that would run on them. Pack asks for one node
// past its limit, to say why a pod would not fit a new one.
func (g *group) template(limit int, daemons []*corev1.Pod) simulate.Template {
	nodes := g.next(limit + 1)
	return simulate.Template{
		Pool:     g.name(),
		Node:     func(i int) *corev1.Node { return nodes[min(i, len(nodes)-1)] },
		Variants: len(g.pool.Zones),
		Daemons:  daemons,
	}
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gpuCount is the GPUs a node's machine has, from the label berth and
// NVIDIA's GPU feature discovery put on it; 0 for a CPU node.
func gpuCount(n *corev1.Node) int {
	c, _ := strconv.Atoi(n.Labels[v1alpha1.LabelGPUCount])
	return c
}

// gpuResource is the resource a node's GPUs are advertised as.
func (g *group) gpuResource() corev1.ResourceName {
	return corev1.ResourceName(g.pool.GPUResource())
}

// resourceUnready is a GPU node whose GPUs are not advertised yet:
// cluster-autoscaler counts it unready (its GPU processor), and, while
// it is young, as capacity on the way rather than a reason to add more.
func resourceUnready(n *corev1.Node, res corev1.ResourceName) bool {
	if gpuCount(n) == 0 || res == "" {
		return false
	}
	q, ok := n.Status.Allocatable[res]
	return !ok || q.IsZero()
}

// started is a registered node as it will be once Ready: without the
// taints the node lifecycle controller puts on a node that is not.
func started(n *corev1.Node) *corev1.Node {
	n = n.DeepCopy()
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	})
	return n
}

// withGPUs is n as it will be once its device plugin advertises its
// GPUs; a node without GPUs or a pool without a GPU resource stays n.
func withGPUs(n *corev1.Node, res corev1.ResourceName) *corev1.Node {
	if res == "" || gpuCount(n) == 0 {
		return n
	}
	n = n.DeepCopy()
	q := *resource.NewQuantity(int64(gpuCount(n)), resource.DecimalSI)
	if n.Status.Capacity == nil {
		n.Status.Capacity = corev1.ResourceList{}
	}
	if n.Status.Allocatable == nil {
		n.Status.Allocatable = corev1.ResourceList{}
	}
	n.Status.Capacity[res] = q
	n.Status.Allocatable[res] = q
	return n
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
