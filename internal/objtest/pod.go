package objtest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
)

// GPU is the resource name of an NVIDIA GPU, as its device plugin
// advertises it.
const GPU corev1.ResourceName = v1alpha1.ResourceNVIDIAGPU

// PodWrapper builds a pod: MakePod(...), its setters, then Obj().
type PodWrapper struct{ corev1.Pod }

// MakePod is a pod as the API server holds one just created: Pending, on
// no node, with one container "main" that requests nothing. Its UID is
// "NAMESPACE/NAME", so pods of a test are told apart by UID as well.
func MakePod(namespace, name string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, UID: types.UID(namespace + "/" + name),
			Labels: map[string]string{},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "main",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

// Obj is the pod built.
func (p *PodWrapper) Obj() *corev1.Pod { return &p.Pod }

// Namespace moves the pod to namespace ns (its UID stays).
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// Label sets a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper { p.ObjectMeta.Labels[k] = v; return p }

// Labels sets every label of m.
func (p *PodWrapper) Labels(m map[string]string) *PodWrapper {
	for k, v := range m {
		p.ObjectMeta.Labels[k] = v
	}
	return p
}

// Annotate sets an annotation.
func (p *PodWrapper) Annotate(k, v string) *PodWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

// Created sets the pod's creation time.
func (p *PodWrapper) Created(t time.Time) *PodWrapper {
	p.CreationTimestamp = metav1.NewTime(t)
	return p
}

// ContainerName renames the first container.
func (p *PodWrapper) ContainerName(name string) *PodWrapper {
	p.Spec.Containers[0].Name = name
	return p
}

// Request sets the first container's request of a resource. An extended
// resource (anything but CPU and memory) gets the same limit, as the API
// server requires of one.
func (p *PodWrapper) Request(name corev1.ResourceName, q string) *PodWrapper {
	r := &p.Spec.Containers[0].Resources
	r.Requests[name] = resource.MustParse(q)
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = resource.MustParse(q)
	}
	return p
}

// CPU sets the first container's CPU request.
func (p *PodWrapper) CPU(q string) *PodWrapper { return p.Request(corev1.ResourceCPU, q) }

// Memory sets the first container's memory request.
func (p *PodWrapper) Memory(q string) *PodWrapper { return p.Request(corev1.ResourceMemory, q) }

// GPU sets the first container's request and limit of NVIDIA GPUs.
func (p *PodWrapper) GPU(q string) *PodWrapper { return p.Request(GPU, q) }

// Resources replaces the first container's requests and limits.
func (p *PodWrapper) Resources(requests, limits corev1.ResourceList) *PodWrapper {
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: requests, Limits: limits}
	return p
}

// InitRequest sets an init container's request of a resource (the pod's
// one init container, "init", made on first use).
func (p *PodWrapper) InitRequest(name corev1.ResourceName, q string) *PodWrapper {
	if len(p.Spec.InitContainers) == 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}
	}
	p.Spec.InitContainers[0].Resources.Requests[name] = resource.MustParse(q)
	return p
}

// Volume adds a volume.
func (p *PodWrapper) Volume(v corev1.Volume) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, v)
	return p
}

// NodeSelector sets a nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

// Tolerate adds a toleration of every taint with the key, whatever its
// value and effect.
func (p *PodWrapper) Tolerate(key string) *PodWrapper {
	return p.Toleration(corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
}

// Toleration adds a toleration as written.
func (p *PodWrapper) Toleration(t corev1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// Spread adds a DoNotSchedule topology spread constraint over key among
// the pods labelled app=app.
func (p *PodWrapper) Spread(key string, maxSkew int32, app string) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
	})
	return p
}

// AntiAffinity keeps the pod off any domain of key that runs a pod
// labelled app=app (required, not preferred).
func (p *PodWrapper) AntiAffinity(key, app string) *PodWrapper {
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   key,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}},
	}}
	return p
}

// Priority sets the pod's priority class, its value and preemption policy,
// as the priority admission plugin would.
func (p *PodWrapper) Priority(class string, value int32, policy corev1.PreemptionPolicy) *PodWrapper {
	p.Spec.PriorityClassName = class
	p.Spec.Priority = &value
	p.Spec.PreemptionPolicy = &policy
	return p
}

// Owner makes the pod controlled by a kind (ReplicaSet, Job, ...) of that
// name, whose UID is "KIND/NAME".
func (p *PodWrapper) Owner(kind, name string) *PodWrapper {
	api := "apps/v1"
	if kind == "Job" {
		api = "batch/v1"
	}
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
		APIVersion: api, Kind: kind, Name: name, UID: types.UID(kind + "/" + name), Controller: ptr.To(true),
	})
	return p
}

// NoOwner drops the pod's owners: a bare pod.
func (p *PodWrapper) NoOwner() *PodWrapper { p.OwnerReferences = nil; return p }

// NodeName binds the pod to a node and leaves its phase as it was (a pod
// the kubelet has not started yet).
func (p *PodWrapper) NodeName(node string) *PodWrapper { p.Spec.NodeName = node; return p }

// On binds the pod to a node, Running.
func (p *PodWrapper) On(node string) *PodWrapper {
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return p
}

// Ready makes the pod Running with its Ready condition true.
func (p *PodWrapper) Ready() *PodWrapper { return p.running(corev1.ConditionTrue) }

// NotReady makes the pod Running with its Ready condition false.
func (p *PodWrapper) NotReady() *PodWrapper { return p.running(corev1.ConditionFalse) }

func (p *PodWrapper) running(ready corev1.ConditionStatus) *PodWrapper {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	return p
}

// Unschedulable marks the pod as the scheduler leaves one it cannot place:
// Pending, PodScheduled false for Unschedulable, with the scheduler's
// message (which may be empty).
func (p *PodWrapper) Unschedulable(msg string) *PodWrapper {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg,
	})
	return p
}

// Phase sets the pod's phase.
func (p *PodWrapper) Phase(phase corev1.PodPhase) *PodWrapper { p.Status.Phase = phase; return p }
