// Package pools simulates a blueprint's node pools on a berth local
// cluster: the nodes a pool is made of, and the plan and steps that add,
// resize, update, replace (blue/green) and remove them. It talks to the
// cluster only through its API, so it works the same from the process
// that runs the cluster and from any other.
package pools

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

const nodeEphemeralStorage = "100Gi"

// NodeName is the name of a pool's i-th node of a generation: POOL-I for
// the first generation, POOL-gG-I after a replacement.
func NodeName(pool string, generation, i int) string {
	if generation <= 1 {
		return pool + "-" + strconv.Itoa(i)
	}
	return pool + "-g" + strconv.Itoa(generation) + "-" + strconv.Itoa(i)
}

// NewNode returns the i-th simulated node of a pool's first generation.
func NewNode(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, i int) *corev1.Node {
	return newNode(bp, p, 1, i)
}

// newNode returns the i-th node of a generation of a pool: the labels,
// taints, zone and capacity the pool describes, and the annotation that
// hands its kubelet to KWOK. Zones go round-robin by i.
func newNode(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, generation, i int) *corev1.Node {
	name := NodeName(p.Name, generation, i)
	zone := p.Zones[i%len(p.Zones)]
	labels := map[string]string{}
	for k, v := range p.Labels {
		labels[k] = v
	}
	capacityType := "on-demand"
	if p.Capacity == v1alpha1.Spot {
		capacityType = "spot"
	}
	for k, v := range map[string]string{
		v1alpha1.LabelPool:                                        p.Name,
		v1alpha1.LabelAgentPool:                                   p.Name,
		v1alpha1.LabelMode:                                        strings.ToLower(string(p.Mode)),
		v1alpha1.LabelCapacity:                                    capacityType,
		v1alpha1.LabelCapacityType:                                capacityType,
		corev1.LabelTopologyZone:                                  zone,
		corev1.LabelTopologyRegion:                                "local",
		corev1.LabelInstanceTypeStable:                            InstanceType(p),
		corev1.LabelOSStable:                                      strings.ToLower(string(p.OS)),
		corev1.LabelArchStable:                                    "amd64",
		corev1.LabelHostname:                                      name,
		v1alpha1.LabelBlueprint:                                   bp.Metadata.Name,
		v1alpha1.LabelPoolGeneration:                              strconv.Itoa(generation),
		"node.kubernetes.io/exclude-from-external-load-balancers": "",
		"type": "kwok",
	} {
		labels[k] = v
	}
	if g := p.Machine.GPU; g != nil {
		labels[v1alpha1.LabelGPUProduct] = g.Product
		labels[v1alpha1.LabelGPUCount] = strconv.Itoa(int(g.Count))
	}
	taints := p.NodeTaints()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              p.Machine.CPU.DeepCopy(),
		corev1.ResourceMemory:           p.Machine.Memory.DeepCopy(),
		corev1.ResourcePods:             *resource.NewQuantity(int64(p.MaxPods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse(nodeEphemeralStorage),
	}
	reserved := reservedList(p.Reserved)
	annotations := map[string]string{
		v1alpha1.AnnotationKWOKNode:       "fake",
		v1alpha1.AnnotationSystemReserved: FormatResources(reserved),
		v1alpha1.AnnotationPoolLabels:     strings.Join(slices.Sorted(maps.Keys(p.Labels)), ","),
	}
	if r := p.GPUResource(); r != "" {
		gpus := corev1.ResourceList{corev1.ResourceName(r): *resource.NewQuantity(int64(p.Machine.GPU.Count), resource.DecimalSI)}
		capacity[corev1.ResourceName(r)] = gpus[corev1.ResourceName(r)]
		annotations[v1alpha1.AnnotationDevices] = FormatResources(gpus)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: Allocatable(capacity, reserved),
			// KWOK's node-initialize stage keeps a kubelet version the
			// node registers with.
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: strings.ToLower(string(p.OS)),
				Architecture:    "amd64",
				KubeletVersion:  p.KubeletVersion(),
			},
		},
	}
}

// StripGPUs returns a copy of n without the devices v1alpha1.AnnotationDevices
// lists in its capacity and allocatable: the node as its kubelet
// registers it, before the device plugin advertises its GPUs. NewNode
// describes the whole machine, as an autoscaler's template node must;
// whatever creates a node on the cluster creates StripGPUs of it.
func StripGPUs(n *corev1.Node) *corev1.Node {
	out := n.DeepCopy()
	devices, err := ParseResources(n.Annotations[v1alpha1.AnnotationDevices])
	if err != nil {
		return out // not a node berth wrote: nothing of it is known to be a device
	}
	for r := range devices {
		delete(out.Status.Capacity, r)
		delete(out.Status.Allocatable, r)
	}
	return out
}

// InstanceType is the node.kubernetes.io/instance-type of a pool's nodes.
func InstanceType(p *v1alpha1.Pool) string {
	if p.Machine.Type != "" {
		return p.Machine.Type
	}
	s := fmt.Sprintf("c%s-m%s", p.Machine.CPU.String(), strings.ToLower(p.Machine.Memory.String()))
	if g := p.Machine.GPU; g != nil {
		s += fmt.Sprintf("-%dx%s", g.Count, strings.ToLower(g.Product))
	}
	return s
}

func reservedList(r *v1alpha1.Reserved) corev1.ResourceList {
	out := corev1.ResourceList{}
	if r == nil {
		return out
	}
	if r.CPU != nil {
		out[corev1.ResourceCPU] = r.CPU.DeepCopy()
	}
	if r.Memory != nil {
		out[corev1.ResourceMemory] = r.Memory.DeepCopy()
	}
	return out
}

// Allocatable is capacity less what the node reserves, as the kubelet
// computes it.
func Allocatable(capacity, reserved corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range capacity {
		a := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			a.Sub(r)
			if a.Sign() < 0 {
				a = resource.Quantity{}
			}
		}
		out[name] = a
	}
	return out
}

// FormatResources writes a ResourceList as the kubelet's --system-reserved
// flag does: cpu=100m,memory=1Gi.
func FormatResources(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// ParseResources reads what FormatResources writes.
func ParseResources(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not NAME=QUANTITY", part)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}
