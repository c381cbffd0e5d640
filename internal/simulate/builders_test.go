package simulate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

// nodeWrapper builds a node for a test, Kueue-style: makeNode(...).obj().
type nodeWrapper struct{ corev1.Node }

func makeNode(name, zone string) *nodeWrapper {
	n := &nodeWrapper{corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname:     name,
			corev1.LabelTopologyZone: zone,
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}},
	}}
	return n
}

func (n *nodeWrapper) label(k, v string) *nodeWrapper { n.Labels[k] = v; return n }

func (n *nodeWrapper) taint(key, value string) *nodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule})
	return n
}

func (n *nodeWrapper) gpus(count int64) *nodeWrapper {
	n.Status.Allocatable[gpu] = *resource.NewQuantity(count, resource.DecimalSI)
	return n
}

func (n *nodeWrapper) cpu(q string) *nodeWrapper {
	n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(q)
	return n
}

func (n *nodeWrapper) cordoned() *nodeWrapper { n.Spec.Unschedulable = true; return n }

func (n *nodeWrapper) obj() *corev1.Node {
	n.Status.Capacity = n.Status.Allocatable
	return &n.Node
}

// podWrapper builds a pod for a test: makePod(...).obj().
type podWrapper struct{ corev1.Pod }

func makePod(name string) *podWrapper {
	return &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "main",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		}}},
	}}
}

func (p *podWrapper) label(k, v string) *podWrapper { p.Labels[k] = v; return p }

func (p *podWrapper) on(node string) *podWrapper { p.Spec.NodeName = node; return p }

func (p *podWrapper) request(name corev1.ResourceName, q string) *podWrapper {
	p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{}
	for k, v := range p.Spec.Containers[0].Resources.Requests {
		if k != corev1.ResourceCPU && k != corev1.ResourceMemory {
			p.Spec.Containers[0].Resources.Limits[k] = v
		}
	}
	return p
}

func (p *podWrapper) tolerate(key string) *podWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	return p
}

func (p *podWrapper) selector(k, v string) *podWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

func (p *podWrapper) spread(key string, maxSkew int32, app string) *podWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew:           maxSkew,
		TopologyKey:       key,
		WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
	})
	return p
}

func (p *podWrapper) antiAffinity(key, app string) *podWrapper {
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   key,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}},
	}}
	return p
}

func (p *podWrapper) controller(uid string) *podWrapper {
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: uid, UID: types.UID(uid), Controller: ptr.To(true),
	}}
	return p
}

func (p *podWrapper) obj() *corev1.Pod { return &p.Pod }
