package cluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
)

// Labels and annotations berth puts on the nodes it simulates.
const (
	LabelPool     = "berth.io/pool"
	LabelMode     = "berth.io/mode"
	LabelCapacity = "berth.io/capacity"
	// LabelAgentPool is AKS's pool label, so manifests written for AKS
	// (nodeSelector: agentpool: NAME) work unchanged.
	LabelAgentPool       = "agentpool"
	LabelCapacityType    = "karpenter.sh/capacity-type"
	LabelGPUProduct      = "nvidia.com/gpu.product"
	LabelGPUCount        = "nvidia.com/gpu.count"
	AnnotationReserved   = "berth.io/system-reserved"
	AnnotationBlueprint  = "berth.io/blueprint"
	nodeEphemeralStorage = "100Gi"
)

// NodeName is the name of a pool's i-th node.
func NodeName(pool string, i int) string { return pool + "-" + strconv.Itoa(i) }

// NewNode returns the i-th simulated node of a pool: the labels, taints,
// zone and capacity the pool describes, and the annotation that hands its
// kubelet to KWOK.
func NewNode(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, i int) *corev1.Node {
	name := NodeName(p.Name, i)
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
		LabelPool:                      p.Name,
		LabelAgentPool:                 p.Name,
		LabelMode:                      strings.ToLower(string(p.Mode)),
		LabelCapacity:                  capacityType,
		LabelCapacityType:              capacityType,
		corev1.LabelTopologyZone:       zone,
		corev1.LabelTopologyRegion:     "local",
		corev1.LabelInstanceTypeStable: InstanceType(p),
		corev1.LabelOSStable:           strings.ToLower(string(p.OS)),
		corev1.LabelArchStable:         "amd64",
		corev1.LabelHostname:           name,
		"node.kubernetes.io/exclude-from-external-load-balancers": "",
		"type": "kwok",
	} {
		labels[k] = v
	}
	if g := p.Machine.GPU; g != nil {
		labels[LabelGPUProduct] = g.Product
		labels[LabelGPUCount] = strconv.Itoa(int(g.Count))
	}
	var taints []corev1.Taint
	for _, s := range p.Taints {
		t, err := v1alpha1.ParseTaint(s)
		if err == nil { // Validate has already refused bad taints
			taints = append(taints, t)
		}
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              p.Machine.CPU.DeepCopy(),
		corev1.ResourceMemory:           p.Machine.Memory.DeepCopy(),
		corev1.ResourcePods:             *resource.NewQuantity(int64(p.MaxPods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse(nodeEphemeralStorage),
	}
	if r := p.GPUResource(); r != "" {
		capacity[corev1.ResourceName(r)] = *resource.NewQuantity(int64(p.Machine.GPU.Count), resource.DecimalSI)
	}
	reserved := reservedList(p.Reserved)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: labels,
			Annotations: map[string]string{
				KubeletAnnotation:   "fake",
				AnnotationReserved:  formatResources(reserved),
				AnnotationBlueprint: bp.Metadata.Name,
			},
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable(capacity, reserved),
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: strings.ToLower(string(p.OS)),
				Architecture:    "amd64",
			},
		},
	}
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

// allocatable is capacity less what the node reserves, as the kubelet
// computes it.
func allocatable(capacity, reserved corev1.ResourceList) corev1.ResourceList {
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

// formatResources writes a ResourceList as the kubelet's --system-reserved
// flag does: cpu=100m,memory=1Gi.
func formatResources(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func parseResources(s string) (corev1.ResourceList, error) {
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

// EnsurePoolNodes gives every pool of the blueprint its nodes. A pool that
// already has nodes (a resumed cluster) keeps them unless sizes names it;
// a pool with none gets sizes[pool], else its initial size. It returns the
// names of all the blueprint's pool nodes.
func EnsurePoolNodes(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint, sizes map[string]int32) ([]string, error) {
	var names []string
	var create []*corev1.Node
	var remove []string
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		existing, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelPool + "=" + p.Name})
		if err != nil {
			return nil, fmt.Errorf("listing nodes of pool %s: %w", p.Name, err)
		}
		want, sized := sizes[p.Name]
		if !sized {
			want = p.InitialSize()
			if len(existing.Items) > 0 {
				want = int32(len(existing.Items))
			}
		}
		have := map[string]bool{}
		for _, n := range existing.Items {
			have[n.Name] = true
		}
		for j := 0; j < int(want); j++ {
			n := NewNode(bp, p, j)
			names = append(names, n.Name)
			if have[n.Name] {
				delete(have, n.Name)
				continue
			}
			create = append(create, n)
		}
		for extra := range have { // shrunk with --nodes
			remove = append(remove, extra)
		}
	}
	// Thousands of nodes are created in parallel: one at a time, the
	// round trips alone would dominate start-up.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, n := range create {
		g.Go(func() error {
			if _, err := c.CoreV1().Nodes().Create(gctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating node %s of pool %s: %w", n.Name, n.Labels[LabelPool], err)
			}
			return nil
		})
	}
	for _, name := range remove {
		g.Go(func() error {
			if err := c.CoreV1().Nodes().Delete(gctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing node %s: %w", name, err)
			}
			return nil
		})
	}
	return names, g.Wait()
}
