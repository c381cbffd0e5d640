package pools

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// LocalClusterConfigMap, in kube-system, marks a berth local cluster: the
// only kind whose nodes berth may add and remove. Elsewhere pools belong
// to the cloud, and `berth export` writes what its tools need.
const LocalClusterConfigMap = "berth-local-cluster"

// Action is what apply does to a pool.
type Action string

const (
	// Create gives a pool with no nodes its first ones.
	Create Action = "create"
	// Resize adds nodes to a pool, or drains and removes some.
	Resize Action = "resize"
	// Update changes what can change on running nodes: labels and the
	// system reservation.
	Update Action = "update"
	// Replace is a blue/green replacement: new nodes, the old ones
	// cordoned, drained through the Eviction API and removed.
	Replace Action = "replace"
	// Delete drains and removes every node of a pool that left the
	// blueprint.
	Delete Action = "delete"
)

// Change is the plan for one pool.
type Change struct {
	Pool   string
	Action Action
	// From and To are the pool's node counts before and after.
	From, To int
	// Fields say what changes, as "what: old → new".
	Fields []string
	// Blockers are why apply would stop part-way, each with its fix;
	// apply refuses to start a change that has any.
	Blockers problem.List
	// FromVersion and ToVersion, set when a Replace changes the pool's
	// Kubernetes version, are the old nodes' kubelet version and the new
	// ones' ("v1.35.0", "v1.36.3").
	FromVersion, ToVersion string

	add    []*corev1.Node
	update []nodePatch
	// remove are nodes to cordon, drain and delete, in that order.
	remove []string
}

// Object names the pool in problems, as a Pool.
func (c *Change) Object() problem.Object { return problem.Object{Kind: "Pool", Name: c.Pool} }

// Adds, Updates and Removes name the nodes the change creates, changes
// in place, and drains and deletes.
func (c *Change) Adds() []string { return nodeNames(c.add) }
func (c *Change) Updates() []string {
	out := make([]string, len(c.update))
	for i, u := range c.update {
		out[i] = u.name
	}
	return out
}

// nodePatch is a merge patch for a node's metadata.
type nodePatch struct {
	name  string
	patch []byte
}

func (c *Change) Removes() []string { return c.remove }

// IsLocal reports whether the cluster is a berth local cluster, whose
// nodes berth simulates.
func IsLocal(ctx context.Context, c kubernetes.Interface) (bool, error) {
	_, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, LocalClusterConfigMap, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("checking for a berth local cluster: %w", err)
	}
}

// Plan compares the blueprint's pools with the cluster's nodes. Pools
// that left the blueprint are deleted when prune is set, and otherwise
// returned in kept. Fit, when set, finds the pods that the changes would
// leave with nowhere to run (see Fit); nil skips that check. Where
// Karpenter provisions, only System pools are planned: the User pools'
// nodes are Karpenter's.
func Plan(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint, prune bool, fit Fit) (changes []Change, kept []string, err error) {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPool})
	if err != nil {
		return nil, nil, fmt.Errorf("listing pool nodes: %w", err)
	}
	byPool := map[string][]*corev1.Node{}
	taken := map[string]string{} // node name → "pool P of blueprint B"
	for i := range list.Items {
		n := &list.Items[i]
		owner := nodeBlueprint(n)
		taken[n.Name] = fmt.Sprintf("pool %s of blueprint %s", n.Labels[v1alpha1.LabelPool], owner)
		if owner == bp.Metadata.Name {
			byPool[n.Labels[v1alpha1.LabelPool]] = append(byPool[n.Labels[v1alpha1.LabelPool]], n)
		}
	}
	pods, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	podsOn := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" && !isDone(p) {
			podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
		}
	}
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if bp.Spec.UsesKarpenter() && p.Mode != v1alpha1.ModeSystem {
			// Karpenter's nodes: it launches, replaces (drift) and
			// removes them itself.
			delete(byPool, p.Name)
			continue
		}
		ch, err := planPool(bp, p, byPool[p.Name], taken)
		if err != nil {
			return nil, nil, err
		}
		delete(byPool, p.Name)
		if ch != nil {
			changes = append(changes, *ch)
		}
	}
	for _, name := range sortedPools(byPool) {
		if !prune {
			kept = append(kept, fmt.Sprintf("pool %s (%d nodes)", name, len(byPool[name])))
			continue
		}
		ch := Change{Pool: name, Action: Delete, From: len(byPool[name])}
		ch.remove = nodeNames(byPool[name])
		changes = append(changes, ch)
	}
	if err := block(ctx, changes, list.Items, podsOn, fit); err != nil {
		return nil, nil, err
	}
	return changes, kept, nil
}

// planPool plans one pool from its live nodes.
func planPool(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, live []*corev1.Node, taken map[string]string) (*Change, error) {
	latest, older := splitGenerations(live)
	gen := generation(latest)
	current := max(len(latest), len(older))
	size := desiredSize(p, current)
	ch := &Change{Pool: p.Name, From: len(live), To: size}

	// A node of the latest generation that no longer matches the pool
	// means a new generation; one begun earlier and interrupted is
	// finished instead.
	for _, n := range latest {
		if f := replaceFields(n, newNode(bp, p, gen, nodeIndex(n)), p); len(f) > 0 {
			ch.Fields = mergeFields(ch.Fields, f)
		}
	}
	switch {
	case len(live) == 0 && size == 0:
		return nil, nil
	case len(live) == 0:
		ch.Action = Create
	case len(ch.Fields) > 0:
		ch.Action = Replace
		older = append(older, latest...)
		latest, gen = nil, gen+1
	case len(older) > 0:
		ch.Action = Replace
		ch.Fields = []string{fmt.Sprintf("finishing the replacement of generation %d by %d", generation(older), gen)}
	}
	// Keep the nodes of the lowest indexes, whatever the indexes are (the
	// autoscaler removes nodes from the middle of a pool), fill the
	// lowest free indexes when the pool grows, and remove the rest.
	sort.Slice(latest, func(i, j int) bool { return nodeIndex(latest[i]) < nodeIndex(latest[j]) })
	keep := latest[:min(size, len(latest))]
	for _, n := range keep {
		want := newNode(bp, p, gen, nodeIndex(n))
		if f := updateFields(n, want); len(f) > 0 {
			ch.Fields = mergeFields(ch.Fields, f)
			ch.update = append(ch.update, nodePatch{n.Name, metadataPatch(n, want)})
		}
	}
	for _, want := range nextNodes(bp, p, gen, keep, size-len(keep)) {
		if owner, ok := taken[want.Name]; ok {
			return nil, problem.Errorf("rename one of the pools", "pool %s needs a node named %s, but that node belongs to %s", p.Name, want.Name, owner)
		}
		ch.add = append(ch.add, want)
	}
	for _, n := range older {
		ch.remove = append(ch.remove, n.Name)
		if v := liveVersion(n); v != "" && v != p.KubeletVersion() {
			ch.FromVersion, ch.ToVersion = v, p.KubeletVersion()
		}
	}
	ch.remove = append(ch.remove, nodeNames(latest[len(keep):])...)
	if ch.Action == "" {
		switch {
		case len(ch.add) > 0 || len(ch.remove) > 0:
			ch.Action = Resize
		case len(ch.update) > 0:
			ch.Action = Update
		default:
			return nil, nil
		}
	}
	return ch, nil
}

// desiredSize is the current size kept within the pool's bounds: a fixed
// pool's size, or Autoscale's.
func desiredSize(p *v1alpha1.Pool, current int) int {
	return min(max(current, int(p.MinSize())), int(p.MaxSize()))
}

// splitGenerations returns the nodes of the newest generation and the
// rest.
func splitGenerations(nodes []*corev1.Node) (latest, older []*corev1.Node) {
	top := generation(nodes)
	for _, n := range nodes {
		if nodeGeneration(n) == top {
			latest = append(latest, n)
		} else {
			older = append(older, n)
		}
	}
	return latest, older
}

// generation is the newest generation among nodes, 1 when there are none.
func generation(nodes []*corev1.Node) int {
	g := 1
	for _, n := range nodes {
		g = max(g, nodeGeneration(n))
	}
	return g
}

func nodeGeneration(n *corev1.Node) int {
	g, err := strconv.Atoi(n.Labels[v1alpha1.LabelPoolGeneration])
	if err != nil || g < 1 {
		return 1
	}
	return g
}

// nodeIndex is the I of POOL-I or POOL-gG-I.
func nodeIndex(n *corev1.Node) int {
	i := strings.LastIndexByte(n.Name, '-')
	v, err := strconv.Atoi(n.Name[i+1:])
	if err != nil {
		return -1
	}
	return v
}

// nodeBlueprint is the blueprint a node's pool belongs to. Nodes made
// before the label existed carry it as an annotation.
func nodeBlueprint(n *corev1.Node) string {
	if b, ok := n.Labels[v1alpha1.LabelBlueprint]; ok {
		return b
	}
	return n.Annotations[v1alpha1.LabelBlueprint]
}

func mergeFields(have, more []string) []string {
	for _, f := range more {
		if !contains(have, f) {
			have = append(have, f)
		}
	}
	return have
}

func nodeNames(nodes []*corev1.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	sort.Strings(out)
	return out
}

func sortedPools(m map[string][]*corev1.Node) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isDone(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
