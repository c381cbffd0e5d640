package audit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

// A manifest set holds pools as definitions rather than Nodes: Karpenter
// NodePools, eksctl node groups. Each becomes a poolDef: the node it
// would make, checked by the pool rules, and where to fix it.
type poolDef struct {
	obj   Object
	field string // where its taints are written
	what  string // "Karpenter NodePool gpu"
	node  *corev1.Node
}

// NodePool is what audit reads of a Karpenter NodePool (karpenter.sh/v1).
type NodePool struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels,omitempty"`
			} `json:"metadata"`
			Spec struct {
				Taints       []corev1.Taint                   `json:"taints,omitempty"`
				Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
			} `json:"spec"`
		} `json:"template"`
		Limits corev1.ResourceList `json:"limits,omitempty"`
	} `json:"spec"`
}

// ClusterConfig is what audit reads of an eksctl ClusterConfig
// (eksctl.io/v1alpha5): its node groups.
type ClusterConfig struct {
	metav1.ObjectMeta `json:"metadata"`
	ManagedNodeGroups []NodeGroup `json:"managedNodeGroups,omitempty"`
	NodeGroups        []NodeGroup `json:"nodeGroups,omitempty"`
}

// NodeGroup is an eksctl node group. Taints are a list ({key, value,
// effect}), or in older configs a map of key to "value:effect".
type NodeGroup struct {
	Name          string            `json:"name"`
	Labels        map[string]string `json:"labels,omitempty"`
	Taints        json.RawMessage   `json:"taints,omitempty"`
	InstanceType  string            `json:"instanceType,omitempty"`
	InstanceTypes []string          `json:"instanceTypes,omitempty"`
	Spot          bool              `json:"spot,omitempty"`
}

func (v *view) poolDefs() []poolDef {
	var out []poolDef
	for i := range v.inv.NodePools {
		np := &v.inv.NodePools[i]
		out = append(out, poolDef{obj: Object{Kind: "NodePool", Name: np.Name}, field: "spec.template.spec.taints",
			what: "Karpenter NodePool " + np.Name, node: np.templateNode()})
	}
	for i := range v.inv.ClusterConfigs {
		c := &v.inv.ClusterConfigs[i]
		for _, groups := range []struct {
			field string
			list  []NodeGroup
		}{{"managedNodeGroups", c.ManagedNodeGroups}, {"nodeGroups", c.NodeGroups}} {
			for j := range groups.list {
				g := &groups.list[j]
				out = append(out, poolDef{obj: Object{Kind: "ClusterConfig", Namespace: c.Namespace, Name: c.Name}, field: fmt.Sprintf("%s[%d].taints", groups.field, j),
					what: fmt.Sprintf("eksctl node group %s (ClusterConfig %s)", g.Name, c.Name), node: g.templateNode()})
			}
		}
	}
	return out
}

// templateNode is a node as the NodePool would make it: its template's
// labels and taints, requirements that allow one value as labels, and
// GPUs when its limits or requirements ask for them.
func (np *NodePool) templateNode() *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: np.Name, Labels: map[string]string{v1alpha1.LabelKarpenterNodePool: np.Name}}}
	for k, v := range np.Spec.Template.Metadata.Labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = np.Spec.Template.Spec.Taints
	gpu := false
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			n.Labels[r.Key] = r.Values[0]
		}
		if strings.Contains(r.Key, "gpu") && r.Operator != corev1.NodeSelectorOpDoesNotExist && r.Operator != corev1.NodeSelectorOpNotIn && !(r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == "0") {
			gpu = true
		}
	}
	for r, q := range np.Spec.Limits {
		if isGPUResource(r) && !q.IsZero() {
			gpu = true
		}
	}
	if gpu {
		n.Status.Capacity = corev1.ResourceList{v1alpha1.ResourceNVIDIAGPU: resource.MustParse("1")} // at least one
	}
	return n
}

// nvidiaTypes are the EC2 families with NVIDIA GPUs (g4dn, g5, g6, g6e,
// gr6, p3, p4d, p5...).
var nvidiaTypes = regexp.MustCompile(`^(g[3-9]|gr[0-9]|p[2-9])[a-z]*\.`)

// templateNode is a node as the node group would make it.
func (g *NodeGroup) templateNode() *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: g.Name, Labels: map[string]string{v1alpha1.LabelEKSNodeGroup: g.Name}}}
	for k, v := range g.Labels {
		n.Labels[k] = v
	}
	if g.Spot {
		n.Labels[v1alpha1.LabelEKSCapacityType] = "SPOT"
	}
	n.Spec.Taints = g.taints()
	for _, t := range append([]string{g.InstanceType}, g.InstanceTypes...) {
		if nvidiaTypes.MatchString(t) {
			n.Status.Capacity = corev1.ResourceList{v1alpha1.ResourceNVIDIAGPU: resource.MustParse("1")} // at least one
		}
	}
	return n
}

func (g *NodeGroup) taints() []corev1.Taint {
	var list []corev1.Taint
	if json.Unmarshal(g.Taints, &list) == nil {
		return list
	}
	var m map[string]string
	if json.Unmarshal(g.Taints, &m) != nil {
		return nil
	}
	for k, ve := range m {
		value, effect, _ := strings.Cut(ve, ":")
		list = append(list, corev1.Taint{Key: k, Value: value, Effect: corev1.TaintEffect(effect)})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Key < list[j].Key })
	return list
}
