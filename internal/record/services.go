package record

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
)

// service is the inference row of a Deployment or StatefulSet whose pods
// ask for GPUs: its replicas now, from its creation (or the window's
// start, when it was made before) to the end of the trace.
func (r *recorder) service(kind string, m metav1.ObjectMeta, replicas *int32, template *corev1.PodTemplateSpec) (Row, bool) {
	s := r.podShape(&template.Spec)
	if s.gpus == 0 {
		r.summary.CPUServices++
		return Row{}, false
	}
	if m.DeletionTimestamp != nil {
		return Row{}, false
	}
	team := r.team(m.Namespace, m.Labels)
	if team == "" {
		return Row{}, false
	}
	r.checkShape(kind, m, s)
	at := m.CreationTimestamp.Time
	if at.Before(r.o.Since) {
		at = r.o.Since
		r.summary.ServicesBefore++
	}
	class := r.class(kind, m, template.Labels)
	r.summary.Services++
	return Row{At: at, UID: string(m.UID), Job: trace.Job{
		Team: team, Kind: scaffold.Inference, Name: r.name("svc", m.Namespace, m.Name),
		Pods: max(ptr.Deref(replicas, 1), 1), GPUs: s.gpus, CPU: s.cpu, Memory: s.memory, Class: class,
	}}, true
}

// queued is what Kueue's Workload says of a Job: when it was admitted
// (zero while it waits).
type queued struct {
	admitted time.Time
}
