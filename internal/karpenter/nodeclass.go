package karpenter

import (
	_ "embed"

	"github.com/awslabs/operatorpkg/object"
	"github.com/awslabs/operatorpkg/status"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// NodeClassGroupVersion and NodeClassKind are what the NodePools `berth
// export --target karpenter` writes refer to (spec.template.spec.nodeClassRef):
// Karpenter's AWS provider's EC2NodeClass. The NodePools are applied
// unchanged, so the local cluster has a node class of that group and kind.
var NodeClassGroupVersion = schema.GroupVersion{Group: "karpenter.k8s.aws", Version: "v1"}

// NodeClassKind is the node class's kind; see NodeClassGroupVersion.
const NodeClassKind = "EC2NodeClass"

// nodeClassCRD is the CustomResourceDefinition of NodeClass: the one
// KWOK's Karpenter provider installs for its KWOKNodeClass, under AWS's
// group and kind, its spec kept as written and its status Ready from
// creation, as KWOK's is.
//
//go:embed nodeclass_crd.yaml
var nodeClassCRD []byte

// NodeClass is berth's stand-in for an EC2NodeClass on a local cluster:
// a NodePool's node class names the AMI, subnets, security groups and
// node role of a cloud, which a local cluster has none of. It is Ready
// from creation; its spec is kept but means nothing locally.
type NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              runtime.RawExtension `json:"spec,omitempty"`
	Status            NodeClassStatus      `json:"status,omitempty"`
}

// NodeClassStatus holds a NodeClass's conditions.
type NodeClassStatus struct {
	Conditions []status.Condition `json:"conditions,omitempty"`
}

// NodeClassList is a list of NodeClasses.
type NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClass `json:"items"`
}

func init() {
	// Karpenter's controllers and its client read the global scheme
	// (operatorpkg's object.GVK), where Karpenter's own types register
	// themselves too.
	metav1.AddToGroupVersion(scheme.Scheme, NodeClassGroupVersion)
	scheme.Scheme.AddKnownTypeWithName(NodeClassGroupVersion.WithKind(NodeClassKind), &NodeClass{})
	scheme.Scheme.AddKnownTypeWithName(NodeClassGroupVersion.WithKind(NodeClassKind+"List"), &NodeClassList{})
}

// StatusConditions are the node class's conditions, Ready among them.
func (in *NodeClass) StatusConditions(opts ...status.ForOption) status.ConditionSet {
	return status.NewReadyConditions().For(in, opts...)
}

// GetConditions returns the node class's conditions.
func (in *NodeClass) GetConditions() []status.Condition { return in.Status.Conditions }

// SetConditions sets the node class's conditions.
func (in *NodeClass) SetConditions(c []status.Condition) { in.Status.Conditions = c }

// DeepCopyObject copies the node class.
func (in *NodeClass) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	out.Status.Conditions = append([]status.Condition(nil), in.Status.Conditions...)
	return &out
}

// DeepCopyObject copies the list.
func (in *NodeClassList) DeepCopyObject() runtime.Object {
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]NodeClass, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*NodeClass)
	}
	return &out
}

// CRDs are the CustomResourceDefinitions `berth up` installs for
// Karpenter: NodePool, NodeClaim, NodeOverlay and CapacityBuffer from the
// Karpenter module berth is built with, and the NodeClass.
func CRDs() []*apiextensionsv1.CustomResourceDefinition {
	return append(karpenterCRDs(), object.Unmarshal[apiextensionsv1.CustomResourceDefinition](nodeClassCRD))
}
