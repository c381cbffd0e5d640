package simulate

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
)

// Template makes the nodes a pool would add: cluster-autoscaler's
// template node, one per new node so that each has its own name,
// hostname and, for a pool over several zones, its zone.
type Template struct {
	// Pool names the pool.
	Pool string
	// Node returns the pool's i-th new node, i from 0. Nodes for
	// different i have different names and hostname labels.
	Node func(i int) *corev1.Node
	// Variants is how many new nodes in a row may differ in more than
	// their name (a pool's zones, taken in turn); 0 means 1. A pod that
	// fits none of that many empty new nodes fits no new node.
	Variants int
	// Daemons are the pods of the cluster's DaemonSets (DaemonPod makes
	// them). Each new node gets those whose filters let them on, as the
	// DaemonSet controller would place them, so that what they request
	// is not counted as room, as cluster-autoscaler's template nodes do.
	Daemons []*corev1.Pod
}

// DaemonPod is the pod a DaemonSet runs on each node, for
// Template.Daemons.
func DaemonPod(ds *appsv1.DaemonSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	p.Namespace, p.Name, p.UID = ds.Namespace, ds.Name, ds.UID
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
	return p
}

// PoolTemplate is the template of a blueprint pool whose next new node
// is its first-th (the pool's current size, usually): the nodes that
// pools.NewNode makes, so labels, taints, zones and allocatable
// (GPUs included) are the ones the pool's real nodes get.
func PoolTemplate(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, first int) Template {
	return Template{
		Pool:     p.Name,
		Node:     func(i int) *corev1.Node { return pools.NewNode(bp, p, first+i) },
		Variants: len(p.Zones),
	}
}

// Packing is how pods would go onto new nodes of one pool.
type Packing struct {
	// Nodes is how many nodes the pool must add for Placements: the new
	// nodes are added in order, so an empty one that comes before a
	// needed one (a zone the pods cannot use) is counted.
	Nodes int
	// Placements are the pods that would fit and their new node.
	Placements []Placement
	// Misfits are the pods that would not fit.
	Misfits []Misfit
}

// Misfit is a pod that new nodes of a pool would not hold.
type Misfit struct {
	Pod *corev1.Pod
	// Verdict is the pod's verdict on an empty new node. When it fits,
	// the pod was left out only because the pool reached its limit of nodes.
	Verdict Verdict
}

// Pack bin-packs pods, in order, onto at most limit new nodes of t, as
// cluster-autoscaler's binpacking estimator does: each pod goes onto a
// new node already opened if one fits it, newest first, and otherwise
// onto one more new node. Every verdict is the Filter plugins' over the
// whole simulation, so spread and affinity count the existing nodes and
// pods. Pack leaves the simulation as it found it.
func (s *Simulator) Pack(ctx context.Context, pods []*corev1.Pod, t Template, limit int) (*Packing, error) {
	s.snap.fork()
	defer s.snap.revert()
	variants := max(t.Variants, 1)
	var (
		out Packing
		// opened are the new nodes so far, newest first; the first
		// empty of them hold no pod yet.
		opened []fwk.NodeInfo
		empty  int
		index  = map[string]int{}
		groups = map[types.UID]*group{}
	)
	for _, pod := range pods {
		g := groupOf(groups, pod)
		if g != nil && g.failedAt == s.snap.generation {
			// An identical pod fit no new node and nothing has changed.
			out.Misfits = append(out.Misfits, Misfit{Pod: pod, Verdict: g.misfit})
			continue
		}
		node, _, err := s.firstFit(ctx, g, pod, opened, 0, "")
		if err != nil {
			return nil, err
		}
		for node == "" && empty < variants && len(opened) < limit {
			n := t.Node(len(opened))
			if err := s.snap.addNode(n); err != nil {
				return nil, fmt.Errorf("pool %s: %w", t.Pool, err)
			}
			if err := s.addDaemons(ctx, t, n.Name); err != nil {
				return nil, err
			}
			index[n.Name] = len(opened)
			opened = slices.Insert(opened, 0, fwk.NodeInfo(s.snap.infos[n.Name]))
			empty++
			if node, _, err = s.firstFit(ctx, g, pod, opened[:1], 0, ""); err != nil {
				return nil, err
			}
		}
		if node == "" {
			v, err := s.onEmpty(ctx, pod, t, opened, empty)
			if err != nil {
				return nil, err
			}
			out.Misfits = append(out.Misfits, Misfit{Pod: pod, Verdict: v})
			if g != nil {
				g.failedAt, g.misfit = s.snap.generation, v
			}
			continue
		}
		if err := s.snap.bind(pod, node); err != nil {
			return nil, err
		}
		s.carry(ctx, g, pod, node)
		if i := index[node]; i+1 > out.Nodes {
			out.Nodes = i + 1
			empty = len(opened) - out.Nodes
		}
		out.Placements = append(out.Placements, Placement{Pod: pod, Node: node})
	}
	return &out, nil
}

// addDaemons binds to a new node the daemon pods its filters let on.
func (s *Simulator) addDaemons(ctx context.Context, t Template, node string) error {
	for _, d := range t.Daemons {
		v, err := s.verdict(ctx, d, s.snap.infos[node])
		if err != nil {
			return err
		}
		if !v.Fits() {
			continue
		}
		p := *d
		p.UID = types.UID(string(d.UID) + "/" + node)
		if err := s.snap.bind(&p, node); err != nil {
			return err
		}
	}
	return nil
}

// onEmpty is pod's verdict on an empty new node of t: the oldest empty
// one opened, or one added for the question and taken away again. The
// node added for the question holds no daemon pods, so a pod that fits
// only without them is reported as fitting (and left out for the limit).
func (s *Simulator) onEmpty(ctx context.Context, pod *corev1.Pod, t Template, opened []fwk.NodeInfo, empty int) (Verdict, error) {
	if empty > 0 {
		return s.verdict(ctx, pod, opened[empty-1])
	}
	n := t.Node(len(opened))
	if err := s.snap.addNode(n); err != nil {
		return Verdict{}, fmt.Errorf("pool %s: %w", t.Pool, err)
	}
	v, err := s.verdict(ctx, pod, s.snap.infos[n.Name])
	s.snap.removeLast()
	return v, err
}

// verdict runs PreFilter and Filter for pod on one node.
func (s *Simulator) verdict(ctx context.Context, pod *corev1.Pod, ni fwk.NodeInfo) (Verdict, error) {
	c, err := s.preFilter(ctx, pod)
	if err != nil {
		return Verdict{}, err
	}
	return s.filter(ctx, c, pod, ni)
}
