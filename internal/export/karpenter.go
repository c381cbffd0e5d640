package export

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
)

// The karpenter.sh/v1 NodePool berth writes: a subset of Karpenter's type,
// same field names (the tests parse the output strictly with
// sigs.k8s.io/karpenter/pkg/apis/v1).
type nodePool struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   nodePoolMeta `yaml:"metadata"`
	Spec       nodePoolSpec `yaml:"spec"`
}

type nodePoolMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

type nodePoolSpec struct {
	Template   nodeClaimTemplate `yaml:"template"`
	Disruption disruption        `yaml:"disruption"`
	Limits     map[string]string `yaml:"limits,omitempty"`
	Weight     int32             `yaml:"weight,omitempty"`
}

type nodeClaimTemplate struct {
	Metadata struct {
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec nodeClaimSpec `yaml:"spec"`
}

type nodeClaimSpec struct {
	NodeClassRef nodeClassRef  `yaml:"nodeClassRef"`
	Requirements []requirement `yaml:"requirements"`
	Taints       []eksTaint    `yaml:"taints,omitempty"`
}

type nodeClassRef struct {
	Group string `yaml:"group"`
	Kind  string `yaml:"kind"`
	Name  string `yaml:"name"`
}

type requirement struct {
	Key      string   `yaml:"key"`
	Operator string   `yaml:"operator"`
	Values   []string `yaml:"values"`
}

type disruption struct {
	ConsolidationPolicy string `yaml:"consolidationPolicy"`
	ConsolidateAfter    string `yaml:"consolidateAfter"`
}

// Node classes the NodePools refer to; the user provides them.
const (
	nodeClassGroup   = "karpenter.k8s.aws"
	nodeClassKind    = "EC2NodeClass"
	linuxNodeClass   = "default"
	windowsNodeClass = "windows"
)

func writeKarpenter(w io.Writer, bp *v1alpha1.Blueprint) error {
	ps := &problems{bp: bp, target: Karpenter}
	_, realZones := zoneRegion(awsZoneRE, bp.Spec.Zones)
	head := append(header(bp, Karpenter), "",
		fmt.Sprintf("Karpenter NodePools, one per User pool. Each refers to an %s (%s) that you provide: %q for Linux pools, %q for Windows pools; it names the AMI, subnets, security groups and node role.", nodeClassKind, nodeClassGroup, linuxNodeClass, windowsNodeClass),
		"Instance types are EKS's, as in `berth export --target eks`.", "")
	switch {
	case realZones:
		head = append(head, "Zones: each NodePool keeps to its pool's zones (topology.kubernetes.io/zone).")
	case defaultZones(bp):
		head = append(head, "The blueprint names no zones of its own (only berth's default zone-1), so the NodePools do not restrict zones.")
	default:
		head = append(head, fmt.Sprintf("The blueprint's zones (%s) are not AWS availability zones, so the NodePools do not restrict topology.kubernetes.io/zone; the EC2NodeClass's subnets decide.", strings.Join(bp.Spec.Zones, ", ")))
	}
	var skipped []string
	var exported []*v1alpha1.Pool
	for i := range bp.Spec.Pools {
		if p := &bp.Spec.Pools[i]; p.Mode == v1alpha1.ModeSystem {
			skipped = append(skipped, p.Name)
		} else {
			exported = append(exported, p)
		}
	}
	weights, rankNote := karpenterWeights(bp, exported)
	var pools []nodePool
	var notes [][]string
	for i := range bp.Spec.Pools {
		if bp.Spec.Pools[i].Mode == v1alpha1.ModeSystem {
			continue
		}
		np, n := nodePoolFor(bp, i, realZones, weights, ps)
		pools, notes = append(pools, np), append(notes, n)
	}
	if err := ps.err(); err != nil {
		return err
	}
	if len(skipped) > 0 {
		what := "the System pool " + skipped[0]
		if len(skipped) > 1 {
			what = "the System pools " + strings.Join(skipped, ", ")
		}
		head = append(head, "", fmt.Sprintf("Not exported: %s. Karpenter and the cluster's add-ons need nodes before Karpenter can start any, so System pools belong in an EKS managed node group (`berth export --target eks`).", what))
	}
	if len(exported) > 0 {
		head = append(head, "")
		for i, n := range karpenterProfileNotes(bp, len(weights) > 0, rankNote) {
			if i > 0 {
				head = append(head, "")
			}
			head = append(head, n)
		}
	}
	writeComment(w, "", head...)
	for i, np := range pools {
		root, err := toNode(np)
		if err != nil {
			return err
		}
		root.HeadComment = commentText(notes[i])
		fmt.Fprintln(w, "---")
		if err := writeNode(w, root); err != nil {
			return err
		}
	}
	return nil
}

func nodePoolFor(bp *v1alpha1.Blueprint, i int, realZones bool, weights map[string]int32, ps *problems) (nodePool, []string) {
	p := &bp.Spec.Pools[i]
	sz := poolSize(p)
	notes := []string{poolSummary(p, sz)}
	m, prob := resolveMachine(i, p, aws)
	if prob != nil {
		ps.list = append(ps.list, *prob)
		return nodePool{}, nil
	}
	notes = append(notes, m.Notes...)

	np := nodePool{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Metadata: nodePoolMeta{Name: p.Name, Labels: compile.Labels(bp)}}
	tmpl := &np.Spec.Template
	tmpl.Metadata.Labels = nodeLabels(bp, p, labelSet{noCapacityType: true, noGPUProduct: m.Substituted})
	class := linuxNodeClass
	if p.OS == v1alpha1.Windows {
		class = windowsNodeClass
	}
	tmpl.Spec.NodeClassRef = nodeClassRef{Group: nodeClassGroup, Kind: nodeClassKind, Name: class}
	tmpl.Spec.Requirements = []requirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{m.Type}},
		{Key: v1alpha1.LabelCapacityType, Operator: "In", Values: []string{capacityType(p)}},
		{Key: corev1.LabelOSStable, Operator: "In", Values: []string{strings.ToLower(string(p.OS))}},
	}
	if realZones {
		tmpl.Spec.Requirements = append(tmpl.Spec.Requirements, requirement{Key: corev1.LabelTopologyZone, Operator: "In", Values: p.Zones})
	}
	for _, t := range p.NodeTaints() {
		tmpl.Spec.Taints = append(tmpl.Spec.Taints, eksTaint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	np.Spec.Limits = karpenterLimits(p, m, sz.Max)
	var disruptionNotes []string
	np.Spec.Disruption, disruptionNotes = karpenterDisruption(profile(bp), p)
	if w, ok := weights[p.Name]; ok {
		np.Spec.Weight = w
		disruptionNotes = append(disruptionNotes, fmt.Sprintf("spec.weight %d: the pool's priority %d for the priority expander.", w, p.Autoscale.Priority))
	}

	notes = append(notes, fmt.Sprintf("spec.limits hold the pool to at most %d %s nodes, the blueprint's maximum.", sz.Max, m.Type))
	switch {
	case !sz.Autoscaled:
		notes = append(notes, fmt.Sprintf("Karpenter has no fixed pool size: it starts nodes only for pods that need them, so the blueprint's count of %d is only the limit here.", sz.Max))
	case sz.Min > 0:
		notes = append(notes, fmt.Sprintf("Karpenter has no minimum size: it starts nodes only for pods that need them, so the blueprint's minimum of %d nodes is not kept. Keep a floor with an EKS managed node group or placeholder pods.", sz.Min))
	}
	if p.Capacity == v1alpha1.Spot {
		notes = append(notes, "Spot: Karpenter drains a node AWS is reclaiming only if its interruption queue is set up.")
	}
	return np, append(notes, disruptionNotes...)
}

// karpenterLimits cap the NodePool's total capacity at max nodes. They use
// the instance type's real size when the catalog knows it: Karpenter
// counts what it launched, and a limit sized by the blueprint's smaller
// machine would stop it short of max nodes.
func karpenterLimits(p *v1alpha1.Pool, m machine, max int32) map[string]string {
	n := int64(max)
	limits := map[string]string{}
	if t := m.Known; t != nil {
		limits["cpu"] = strconv.FormatInt(t.CPU*n, 10)
		limits["memory"] = strconv.FormatInt(t.Memory*n, 10) + "Gi"
	} else {
		limits["cpu"] = resource.NewMilliQuantity(p.Machine.CPU.MilliValue()*n, resource.DecimalSI).String()
		limits["memory"] = resource.NewQuantity(p.Machine.Memory.Value()*n, resource.BinarySI).String()
	}
	if g := p.Machine.GPU; g != nil {
		gpus := int64(g.Count)
		if m.Known != nil && m.Known.GPUs > 0 {
			gpus = int64(m.Known.GPUs)
		}
		limits[p.GPUResource()] = strconv.FormatInt(gpus*n, 10)
	}
	return limits
}
