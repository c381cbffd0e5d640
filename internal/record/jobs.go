package record

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
	"berth.io/berth/internal/words"
)

// Finished says whether j has finished, and when: Complete or Failed, at
// its completion time or the condition's.
func Finished(j *batchv1.Job) (time.Time, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			if j.Status.CompletionTime != nil {
				return j.Status.CompletionTime.Time, true
			}
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// job is j's row, when it has finished, was submitted in the window and
// belongs to a team; otherwise it is counted where the summary says why.
func (r *recorder) job(j *batchv1.Job) (Row, bool) {
	if j.Spec.TTLSecondsAfterFinished != nil {
		r.summary.noteTTL(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second)
	}
	end, done := Finished(j)
	switch {
	case !done && ptr.Deref(j.Spec.Suspend, false):
		r.summary.Waiting++
		return Row{}, false
	case !done:
		r.summary.Running++
		return Row{}, false
	case j.CreationTimestamp.Time.Before(r.o.Since):
		r.summary.Before++
		return Row{}, false
	}
	team := r.team(j.Namespace, j.Labels)
	if team == "" {
		return Row{}, false
	}
	pods := r.podsOf[j.UID]
	spec := &j.Spec.Template.Spec
	for _, p := range pods {
		if p.Status.StartTime != nil {
			spec = &p.Spec
			break
		}
	}
	s := r.podShape(spec)

	parallelism := ptr.Deref(j.Spec.Parallelism, 1)
	n := parallelism
	if c := j.Spec.Completions; c != nil && *c != parallelism {
		n = max(min(parallelism, *c), 1)
		r.summary.Problems = append(r.summary.Problems, warn("Job", j.Namespace, j.Name,
			fmt.Sprintf("completions %d unlike parallelism %d: recorded as %d pods that share the Job's pod time (a trace row's pods each run once, all at once)", *c, parallelism, n),
			"write such work as a Job whose completions equal its parallelism, or as several Jobs, to replay its waves as they ran"))
	}
	if n < 1 {
		n = 1
	}

	checkpoint := checkpointOf(j)
	var total time.Duration
	ran := 0
	for _, p := range pods {
		if d, ok := runTime(p, end); ok {
			if stopped, ok := disrupted(p); ok {
				d = min(d, stopped)
				if r.o.Disruptions {
					d = saved(d, checkpoint)
				}
			}
			total += d
			ran++
		}
	}
	if ran == 0 {
		if len(pods) == 0 && j.Status.StartTime != nil && end.After(j.Status.StartTime.Time) {
			// Its pods are gone (garbage-collected): the Job's own span.
			total = end.Sub(j.Status.StartTime.Time) * time.Duration(n)
			r.summary.Problems = append(r.summary.Problems, warn("Job", j.Namespace, j.Name,
				"its pods are gone: each pod's run time is taken from the Job's start and completion, waits for nodes included",
				"record before the cluster's terminated-pod garbage collection removes finished pods, or with --watch"))
		} else {
			r.summary.NeverRan++
			return Row{}, false
		}
	}
	r.checkShape("Job", j.ObjectMeta, s)
	// Rounded up: a replay's pod completes on the whole second after its
	// run time, as a pod's times have whole seconds.
	duration := max((total/time.Duration(n) + time.Second - 1).Truncate(time.Second), time.Second)

	class := r.class("Job", j.ObjectMeta, j.Spec.Template.Labels)
	row := Row{At: j.CreationTimestamp.Time, UID: string(j.UID), Job: trace.Job{
		Team: team, Kind: r.kind(j.ObjectMeta, j.Spec.Template.Labels, class, s.gpus), Name: j.Name,
		Pods: n, GPUs: s.gpus, CPU: s.cpu, Memory: s.memory, Duration: duration, Class: class,
	}}
	if checkpoint < duration {
		row.Checkpoint = checkpoint
	}
	if q, ok := r.queued[j.UID]; ok && !q.admitted.IsZero() {
		r.summary.Queued++
		wait := max(q.admitted.Sub(j.CreationTimestamp.Time), 0)
		r.summary.QueueWait += wait
		r.summary.LongestWait = max(r.summary.LongestWait, wait)
	}
	r.summary.Jobs++
	r.summary.noteKind(row.Kind)
	row.Name = r.name("job", j.Namespace, j.Name)
	return row, true
}

// kind is a Job's kind: its component or rehearsal label when it says
// training or batch; else its class's role; else by its GPUs.
func (r *recorder) kind(m metav1.ObjectMeta, template map[string]string, class string, gpus int64) scaffold.Kind {
	for _, key := range []string{v1alpha1.LabelAppComponent, v1alpha1.LabelRehearsal} {
		for _, labels := range []map[string]string{m.Labels, template} {
			if k := scaffold.Kind(labels[key]); k == scaffold.Training || k == scaffold.Batch {
				return k
			}
		}
	}
	if c := r.classes[class]; c != nil {
		if c.EffectiveRole() == v1alpha1.RoleTraining {
			return scaffold.Training
		}
		return scaffold.Batch
	}
	if gpus > 0 {
		return scaffold.Training
	}
	return scaffold.Batch
}

// checkShape reports a pod that asks for no CPU or memory, and one with
// a part of a GPU.
func (r *recorder) checkShape(kind string, m metav1.ObjectMeta, s shape) {
	if s.cpu.IsZero() && s.memory.IsZero() {
		r.summary.Problems = append(r.summary.Problems, warn(kind, m.Namespace, m.Name,
			"its pods ask for no CPU or memory: recorded with cpu and memory empty, which a replay fills with what berth new asks",
			"give its containers resources.requests (or the namespace a LimitRange with defaults), so that the recording says what it used"))
	}
	if len(s.fractional) > 0 {
		r.summary.Fractional++
		r.summary.Problems = append(r.summary.Problems, warn(kind, m.Namespace, m.Name,
			fmt.Sprintf("its pods ask for part of a GPU (%s): recorded as %s, a slice or share counting as one", strings.Join(s.fractional, ", "), words.Count(int(s.gpus), "whole GPU")),
			"replay it on a pool of whole GPUs as recorded, or edit the row's gpus; a trace's GPUs are whole, as Kubernetes gives nvidia.com/gpu"))
	}
}

// checkpointOf is how often j's pods save their work: its
// berth.io/checkpoint annotation (a rehearsal's Jobs carry their row's);
// zero when it says none.
func checkpointOf(j *batchv1.Job) time.Duration {
	d, err := time.ParseDuration(j.Annotations[v1alpha1.AnnotationCheckpoint])
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// disrupted says whether a disruption ended p (a spot notice, a
// preemption, a drain: its DisruptionTarget condition) rather than its
// own failure, and how long it ran by then: to the condition and its
// termination grace period, when the kubelet stops it. (A simulated pod
// whose node went may show its planned finish instead: this is when it
// stopped.)
func disrupted(p *corev1.Pod) (time.Duration, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			grace := time.Duration(ptr.Deref(p.Spec.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds)) * time.Second
			start, ok := started(p)
			if !ok || c.LastTransitionTime.IsZero() {
				return 0, false
			}
			return max(c.LastTransitionTime.Add(grace).Sub(start), 0), true
		}
	}
	return 0, false
}

// saved is the work a pod that ran d kept at its last checkpoint, every
// checkpoint; none without checkpoints.
func saved(d, checkpoint time.Duration) time.Duration {
	if checkpoint <= 0 {
		return 0
	}
	return d / checkpoint * checkpoint
}
