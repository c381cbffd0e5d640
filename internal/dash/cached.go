package dash

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth.io/berth/internal/listing"
)

// cachedLister lists what grows with the cluster (pods, nodes, events)
// for status and why from the server's informers rather than the API
// server: on a cluster of 20,000 pods each reading would otherwise list
// them twice. A list the cache cannot answer (a field selector on a
// field it does not index, a pager's continuation) goes to the API
// server (api), as does everything else status and why read.
type cachedLister struct {
	api    listing.Lister
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	events corelisters.EventLister
}

// podFields are the field selectors a pod list is answered with from the
// cache, as the API server sets them.
func podFields(p *corev1.Pod) fields.Set {
	return fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace, "spec.nodeName": p.Spec.NodeName, "status.phase": string(p.Status.Phase)}
}

func eventFields(e *corev1.Event) fields.Set {
	return fields.Set{
		"metadata.name": e.Name, "metadata.namespace": e.Namespace, "reason": e.Reason, "type": e.Type,
		"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.name": e.InvolvedObject.Name,
		"involvedObject.namespace": e.InvolvedObject.Namespace, "involvedObject.uid": string(e.InvolvedObject.UID),
	}
}

// selectors parses a list's selectors; ok is false when the field
// selector names a field outside known, which the API server must answer.
func selectors(o metav1.ListOptions, known fields.Set) (labels.Selector, fields.Selector, bool) {
	ls, err := labels.Parse(o.LabelSelector)
	if err != nil {
		return nil, nil, false
	}
	fs, err := fields.ParseSelector(o.FieldSelector)
	if err != nil {
		return nil, nil, false
	}
	for _, r := range fs.Requirements() {
		if _, ok := known[r.Field]; !ok {
			return nil, nil, false
		}
	}
	return ls, fs, true
}

// Pods answers from the cache in one page (a pager's Limit is ignored,
// and it gets no Continue). Each pod is a copy: the reader may change it.
func (c *cachedLister) Pods(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.PodList, error) {
	ls, fs, ok := selectors(o, podFields(&corev1.Pod{}))
	if !ok || o.Continue != "" {
		return c.api.Pods(ctx, ns, o)
	}
	var all []*corev1.Pod
	var err error
	if ns == metav1.NamespaceAll {
		all, err = c.pods.List(ls)
	} else {
		all, err = c.pods.Pods(ns).List(ls)
	}
	if err != nil {
		return nil, err
	}
	return &corev1.PodList{Items: items(all, fs, podFields)}, nil
}

func (c *cachedLister) Nodes(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
	ls, fs, ok := selectors(o, fields.Set{"metadata.name": ""})
	if !ok || o.Continue != "" {
		return c.api.Nodes(ctx, o)
	}
	all, err := c.nodes.List(ls)
	if err != nil {
		return nil, err
	}
	return &corev1.NodeList{Items: items(all, fs, func(n *corev1.Node) fields.Set { return fields.Set{"metadata.name": n.Name} })}, nil
}

func (c *cachedLister) Events(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.EventList, error) {
	ls, fs, ok := selectors(o, eventFields(&corev1.Event{}))
	if !ok || o.Continue != "" {
		return c.api.Events(ctx, ns, o)
	}
	var all []*corev1.Event
	var err error
	if ns == metav1.NamespaceAll {
		all, err = c.events.List(ls)
	} else {
		all, err = c.events.Events(ns).List(ls)
	}
	if err != nil {
		return nil, err
	}
	return &corev1.EventList{Items: items(all, fs, eventFields)}, nil
}

// items answers a list from the cache: the objects the field selector
// picks, each a copy (the reader may change it), in the order the API
// server lists them, by namespace then name (their keys in etcd): a
// cache lists in no order, and readers print what they find in list
// order.
func items[T any, P interface {
	*T
	metav1.Object
	DeepCopy() *T
}](all []P, fs fields.Selector, fieldsOf func(P) fields.Set) []T {
	slices.SortFunc(all, func(a, b P) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	out := make([]T, 0, len(all))
	for _, o := range all {
		if fs.Matches(fieldsOf(o)) {
			out = append(out, *o.DeepCopy())
		}
	}
	return out
}
