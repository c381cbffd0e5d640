package objtest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

// NodeWrapper builds a node: MakeNode(...), its setters, then Obj().
type NodeWrapper struct{ corev1.Node }

// MakeNode is a node of 8 CPUs, 32Gi and 110 pods, labelled with its
// hostname, with no conditions (Ready gives it one).
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}},
	}}
}

// Obj is the node built; its capacity is its allocatable.
func (n *NodeWrapper) Obj() *corev1.Node {
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	return &n.Node
}

// Label sets a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper { n.Labels[k] = v; return n }

// Pool labels the node as a node of a berth pool.
func (n *NodeWrapper) Pool(pool string) *NodeWrapper { return n.Label(v1alpha1.LabelPool, pool) }

// Zone labels the node's topology zone.
func (n *NodeWrapper) Zone(zone string) *NodeWrapper {
	return n.Label(corev1.LabelTopologyZone, zone)
}

// Taint adds a taint written as kubectl writes it, KEY[=VALUE]:EFFECT.
func (n *NodeWrapper) Taint(taint string) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint(v1alpha1.MustParseTaint(taint)))
	return n
}

// Allocatable sets how much of a resource pods may request.
func (n *NodeWrapper) Allocatable(name corev1.ResourceName, q string) *NodeWrapper {
	n.Status.Allocatable[name] = resource.MustParse(q)
	return n
}

// CPU sets the node's allocatable CPU.
func (n *NodeWrapper) CPU(q string) *NodeWrapper { return n.Allocatable(corev1.ResourceCPU, q) }

// Memory sets the node's allocatable memory.
func (n *NodeWrapper) Memory(q string) *NodeWrapper { return n.Allocatable(corev1.ResourceMemory, q) }

// GPUs sets how many NVIDIA GPUs the node advertises.
func (n *NodeWrapper) GPUs(count string) *NodeWrapper { return n.Allocatable(GPU, count) }

// Cordon marks the node unschedulable.
func (n *NodeWrapper) Cordon() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// Ready gives the node a Ready condition that is true.
func (n *NodeWrapper) Ready() *NodeWrapper {
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})
	return n
}
