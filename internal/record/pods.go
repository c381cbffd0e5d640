package record

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// shape is one pod's requests as a trace row writes them.
type shape struct {
	cpu, memory resource.Quantity
	gpus        int64
	// fractional names the fractional GPU resources asked for, with
	// their amounts (counted into gpus); empty for none.
	fractional []string
}

// podShape is what spec asks for, as the scheduler counts a pod
// (component-helpers' PodRequests: the containers, the larger of their
// sum and each init container, sidecars, the overhead), each container's
// limit standing for a request it does not give, as the API server
// defaults a pod.
func (r *recorder) podShape(spec *corev1.PodSpec) shape {
	pod := &corev1.Pod{Spec: *spec.DeepCopy()}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			cs[i].Resources.Requests = requests(cs[i])
		}
	}
	sum := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	s := shape{cpu: sum[corev1.ResourceCPU], memory: sum[corev1.ResourceMemory]}
	for _, name := range sortedNames(sum) {
		q := sum[name]
		switch {
		case r.gpus[name]:
			s.gpus += q.Value()
		case fractionalGPU(name):
			s.gpus += q.Value()
			s.fractional = append(s.fractional, fmt.Sprintf("%s: %s", name, q.String()))
		}
	}
	return s
}

// fractionalGPU says whether name is a part of a GPU: a MIG slice
// (nvidia.com/mig-1g.10gb) or a time-sliced share (nvidia.com/gpu.shared,
// as the device plugin renames shared GPUs).
func fractionalGPU(name corev1.ResourceName) bool {
	s := string(name)
	return strings.HasPrefix(s, "nvidia.com/mig-") || strings.HasSuffix(s, "/gpu.shared")
}

func requests(c corev1.Container) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range c.Resources.Limits {
		out[name] = q.DeepCopy()
	}
	for name, q := range c.Resources.Requests {
		out[name] = q.DeepCopy()
	}
	return out
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// runTime is how long p ran: from its containers' first start to their
// last finish; else from the pod's start time to its last condition's
// change (a pod stopped before its containers said so); else, for a pod
// still running when its Job ended, to end. ok is false for a pod that
// never started.
func runTime(p *corev1.Pod, end time.Time) (time.Duration, bool) {
	var start, finish time.Time
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Terminated != nil:
			start = earliest(start, cs.State.Terminated.StartedAt)
			finish = latest(finish, cs.State.Terminated.FinishedAt)
		case cs.State.Running != nil:
			start = earliest(start, cs.State.Running.StartedAt)
		}
	}
	if start.IsZero() && p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	if start.IsZero() {
		return 0, false
	}
	if finish.IsZero() && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
		for _, c := range p.Status.Conditions {
			finish = latest(finish, c.LastTransitionTime)
		}
	}
	if finish.IsZero() {
		finish = end
	}
	if finish.IsZero() {
		return 0, false
	}
	if finish.Before(start) {
		return 0, true
	}
	return finish.Sub(start), true
}

func earliest(t time.Time, m metav1.Time) time.Time {
	if m.IsZero() || (!t.IsZero() && t.Before(m.Time)) {
		return t
	}
	return m.Time
}

func latest(t time.Time, m metav1.Time) time.Time {
	if m.IsZero() || t.After(m.Time) {
		return t
	}
	return m.Time
}

// started is when p's containers first started, else its start time.
func started(p *corev1.Pod) (time.Time, bool) {
	var start time.Time
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Terminated != nil:
			start = earliest(start, cs.State.Terminated.StartedAt)
		case cs.State.Running != nil:
			start = earliest(start, cs.State.Running.StartedAt)
		}
	}
	if start.IsZero() && p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	return start, !start.IsZero()
}
