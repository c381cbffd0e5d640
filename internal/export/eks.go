package export

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

// The eksctl ClusterConfig berth writes: a subset of eksctl's
// eksctl.io/v1alpha5 types, same field names (the tests parse the output
// strictly against a mirror of the upstream types).
type eksConfig struct {
	APIVersion        string         `yaml:"apiVersion"`
	Kind              string         `yaml:"kind"`
	Metadata          eksMetadata    `yaml:"metadata"`
	AvailabilityZones []string       `yaml:"availabilityZones,omitempty"`
	ManagedNodeGroups []eksNodeGroup `yaml:"managedNodeGroups"`
	// Addons are EKS add-ons: the CSI drivers of the blueprint's storage
	// classes.
	Addons []eksAddon `yaml:"addons,omitempty"`
}

// eksAddon is an EKS add-on, by name.
type eksAddon struct {
	Name string `yaml:"name"`
}

type eksMetadata struct {
	Name    string `yaml:"name"`
	Region  string `yaml:"region"`
	Version string `yaml:"version,omitempty"`
}

type eksNodeGroup struct {
	Name              string            `yaml:"name"`
	AMIFamily         string            `yaml:"amiFamily"`
	InstanceType      string            `yaml:"instanceType,omitempty"`
	InstanceTypes     []string          `yaml:"instanceTypes,omitempty"`
	Spot              bool              `yaml:"spot,omitempty"`
	AvailabilityZones []string          `yaml:"availabilityZones,omitempty"`
	MinSize           int32             `yaml:"minSize"`
	DesiredCapacity   int32             `yaml:"desiredCapacity"`
	MaxSize           int32             `yaml:"maxSize"`
	MaxPodsPerNode    int32             `yaml:"maxPodsPerNode"`
	Labels            map[string]string `yaml:"labels"`
	Taints            []eksTaint        `yaml:"taints,omitempty"`
	Tags              map[string]string `yaml:"tags,omitempty"`
	PropagateASGTags  bool              `yaml:"propagateASGTags,omitempty"`
	IAM               *eksIAM           `yaml:"iam,omitempty"`
}

// eksTaint is eksctl's taint object; effects are spelled as in
// Kubernetes (NoSchedule, PreferNoSchedule, NoExecute).
type eksTaint struct {
	Key    string `yaml:"key"`
	Value  string `yaml:"value,omitempty"`
	Effect string `yaml:"effect"`
}

type eksIAM struct {
	WithAddonPolicies eksAddonPolicies `yaml:"withAddonPolicies"`
}

type eksAddonPolicies struct {
	AutoScaler bool `yaml:"autoScaler"`
}

// Cluster Autoscaler's AWS tags: discovery, and the node template it uses
// to scale a group up from zero nodes.
const (
	caEnabledTag  = "k8s.io/cluster-autoscaler/enabled"
	caClusterTag  = "k8s.io/cluster-autoscaler/"
	caLabelTag    = "k8s.io/cluster-autoscaler/node-template/label/"
	caTaintTag    = "k8s.io/cluster-autoscaler/node-template/taint/"
	caResourceTag = "k8s.io/cluster-autoscaler/node-template/resources/"
)

const (
	eksLinuxAMI      = "AmazonLinux2023"
	eksWindowsAMI    = "WindowsServer2022CoreContainer"
	eksTaintPartMax  = 63
	eksRegionDefault = "REGION"
)

var eksNameRE = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)

func writeEKS(w io.Writer, bp *v1alpha1.Blueprint) error {
	ps := &problems{bp: bp, target: EKS}
	region, realZones := zoneRegion(awsZoneRE, bp.Spec.Zones)
	cfg := eksConfig{
		APIVersion: "eksctl.io/v1alpha5",
		Kind:       "ClusterConfig",
		Metadata:   eksMetadata{Name: bp.Metadata.Name, Region: region, Version: minorVersion(bp.Spec.KubernetesVersion)},
	}
	var groupNotes []string
	switch {
	case realZones && len(bp.Spec.Zones) >= 2:
		cfg.AvailabilityZones = bp.Spec.Zones
	case realZones:
		groupNotes = append(groupNotes, "EKS wants subnets in at least two zones and the blueprint names one, so availabilityZones is left to eksctl; the node groups keep to the blueprint's zone.")
	case defaultZones(bp):
		groupNotes = append(groupNotes, "The blueprint names no zones of its own (only berth's default zone-1), so eksctl chooses the availability zones.")
	default:
		groupNotes = append(groupNotes, fmt.Sprintf("The blueprint's zones (%s) are not AWS availability zones, so availabilityZones is left out and eksctl chooses them. Name real zones such as us-east-1a in spec.zones to pin the node groups.", strings.Join(bp.Spec.Zones, ", ")))
	}
	if !realZones {
		cfg.Metadata.Region = eksRegionDefault
	}
	notes := make([][]string, len(bp.Spec.Pools))
	for i := range bp.Spec.Pools {
		ng, n := eksNodeGroupFor(bp, i, realZones, ps)
		cfg.ManagedNodeGroups = append(cfg.ManagedNodeGroups, ng)
		notes[i] = n
	}
	if err := ps.err(); err != nil {
		return err
	}
	storage, _, err := storageClasses(bp, EKS)
	if err != nil {
		return err
	}
	if storage != "" {
		cfg.Addons = append(cfg.Addons, eksAddon{Name: "aws-ebs-csi-driver"})
		if strings.Contains(storage, storageDrivers[EKS].file) {
			cfg.Addons = append(cfg.Addons, eksAddon{Name: "aws-efs-csi-driver"})
		}
	}

	root, err := toNode(cfg)
	if err != nil {
		return err
	}
	if !realZones {
		mapValue(mapValue(root, "metadata"), "region").LineComment = "set your AWS region, e.g. us-east-1"
	}
	if len(autoscaled(bp)) > 0 {
		groupNotes = append(groupNotes, "Autoscaled node groups carry the tags Cluster Autoscaler needs to find them and to scale them up from zero (node-template labels, taints and GPUs); run Cluster Autoscaler as the header says.")
	}
	if v := minorVersion(bp.Spec.KubernetesVersion); v != "" {
		groupNotes = append(groupNotes, fmt.Sprintf("Node groups are made at the control plane's Kubernetes version, metadata.version (%s). When it changes, upgrade the control plane first (`eksctl upgrade cluster -f FILE --approve`), then replace each node group blue/green: a new one at the new version, then `eksctl delete nodegroup` on the old, which drains it under the PodDisruptionBudgets; `berth apply` rehearses the same.", v))
	}
	groupNotes = append(groupNotes, "maxPodsPerNode above what an instance type's network interfaces allow needs VPC CNI prefix delegation.")
	mapKey(root, "managedNodeGroups").HeadComment = commentText(groupNotes)
	for i, item := range mapValue(root, "managedNodeGroups").Content {
		item.HeadComment = commentText(notes[i])
	}
	writeComment(w, "", append(header(bp, EKS), "",
		"An eksctl ClusterConfig: `eksctl create cluster -f FILE` makes the cluster with these node groups; `eksctl create nodegroup -f FILE` adds them to a cluster eksctl made.")...)
	if err := writeEKSAutoscaler(w, bp); err != nil {
		return err
	}
	if err := writeNode(w, root); err != nil {
		return err
	}
	return writeStorageClasses(w, bp, EKS)
}

func eksNodeGroupFor(bp *v1alpha1.Blueprint, i int, realZones bool, ps *problems) (eksNodeGroup, []string) {
	p := &bp.Spec.Pools[i]
	path := poolPath(i)
	sz := poolSize(p)
	notes := []string{poolSummary(p, sz)}
	if !eksNameRE.MatchString(p.Name) {
		ps.add(p.Name, path+".name", "eksctl names node groups with letters, digits and '-', starting with a letter", "rename the pool so that it starts with a letter")
	}
	m, prob := resolveMachine(i, p, aws)
	if prob != nil {
		ps.list = append(ps.list, *prob)
	}
	ng := eksNodeGroup{
		Name:            p.Name,
		AMIFamily:       eksLinuxAMI,
		MinSize:         sz.Min,
		DesiredCapacity: sz.Initial,
		MaxSize:         sz.Max,
		MaxPodsPerNode:  p.MaxPods,
		Labels:          nodeLabels(bp, p, labelSet{noGPUProduct: m.Substituted}),
	}
	if v := p.KubernetesVersion; v != "" && minorVersion(v) != minorVersion(bp.Spec.KubernetesVersion) {
		notes = append(notes, fmt.Sprintf("Kubernetes %s: eksctl has no per-node-group version; a node group is made at the control plane's (metadata.version). Make this one before `eksctl upgrade cluster` raises the control plane, or keep it with `eksctl upgrade nodegroup --kubernetes-version %s`.", minorVersion(v), minorVersion(v)))
	}
	if p.OS == v1alpha1.Windows {
		ng.AMIFamily = eksWindowsAMI
		notes = append(notes, "Windows node groups need Windows support turned on in the cluster (the VPC CNI's enable-windows-ipam) and a Linux node group for CoreDNS.")
	}
	if p.Mode == v1alpha1.ModeSystem {
		notes = append(notes, "EKS has no System node groups: the cluster's add-ons run on any node group whose taints they tolerate (CoreDNS tolerates CriticalAddonsOnly).")
	}
	notes = append(notes, m.Notes...)
	if p.Capacity == v1alpha1.Spot {
		ng.InstanceTypes, ng.Spot = []string{m.Type}, true
		notes = append(notes, "Spot: more instance types of the same shape in instanceTypes widen the capacity EKS can draw on.")
	} else {
		ng.InstanceType = m.Type
	}
	if realZones {
		ng.AvailabilityZones = p.Zones
	}
	if p.Machine.GPU != nil {
		notes = append(notes, "eksctl picks the AL2023 NVIDIA AMI for GPU instance types and installs the NVIDIA device plugin.")
	}
	for j, t := range p.NodeTaints() {
		if len(t.Key) > eksTaintPartMax {
			ps.add(p.Name, fmt.Sprintf("%s.taints[%d]", path, j), fmt.Sprintf("EKS taint keys are at most %d characters, %q has %d", eksTaintPartMax, t.Key, len(t.Key)), "use a shorter key")
		}
		ng.Taints = append(ng.Taints, eksTaint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	if sz.Autoscaled {
		ng.Tags, notes = autoscalerTags(bp, p, ng, notes)
		ng.PropagateASGTags = true
		ng.IAM = &eksIAM{WithAddonPolicies: eksAddonPolicies{AutoScaler: true}}
	}
	return ng, notes
}

// autoscalerTags are the Auto Scaling group tags Cluster Autoscaler reads.
// A tag holds one taint per key, so a second taint with the same key is
// noted instead.
func autoscalerTags(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, ng eksNodeGroup, notes []string) (map[string]string, []string) {
	tags := map[string]string{
		caEnabledTag:                    "true",
		caClusterTag + bp.Metadata.Name: "owned",
	}
	for k, v := range ng.Labels {
		tags[caLabelTag+k] = v
	}
	for _, t := range ng.Taints {
		if _, dup := tags[caTaintTag+t.Key]; dup {
			notes = append(notes, fmt.Sprintf("Cluster Autoscaler's node template holds one taint per key; only the first taint with key %s is in the tags.", t.Key))
			continue
		}
		tags[caTaintTag+t.Key] = t.Value + ":" + t.Effect
	}
	if g := p.Machine.GPU; g != nil {
		tags[caResourceTag+p.GPUResource()] = strconv.Itoa(int(g.Count))
	}
	return tags, notes
}

// minorVersion is "1.36" for "1.36", "v1.36" or "1.36.2"; eksctl takes the
// minor version only.
func minorVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	parts := strings.Split(v, ".")
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return strings.Join(parts, ".")
}
