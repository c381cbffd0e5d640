package record

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/trace"
)

// Cluster is what a recording is made of, as read from a cluster.
type Cluster struct {
	Jobs []batchv1.Job
	// Pods are the Jobs' pods; others are ignored.
	Pods         []corev1.Pod
	Deployments  []appsv1.Deployment
	StatefulSets []appsv1.StatefulSet
	// Namespaces give their labels (berth.io/team, Options.TeamLabel). A
	// namespace not listed has none.
	Namespaces []corev1.Namespace
	// Workloads are Kueue's Workloads (kueue.x-k8s.io), as unstructured
	// objects. Nil where Kueue does not run.
	Workloads []unstructured.Unstructured
	// Events are events about Jobs: those that name a Job the cluster no
	// longer holds say it was there. Nil means none were read.
	Events []corev1.Event
}

// Options say how to map what a cluster ran to a trace.
type Options struct {
	// Blueprint gives the teams (their namespaces), the classes and the
	// pools' GPU resources. Nil means none: teams from the namespaces'
	// labels, classes left empty.
	Blueprint *v1alpha1.Blueprint
	// TeamLabel, when set, is the label key that names a workload's team
	// (the workload's label, else its namespace's), in place of the
	// blueprint's namespaces.
	TeamLabel string
	// Since leaves out Jobs submitted before it. Zero means none are.
	Since time.Time
	// Anonymize writes stable hashes in place of the workloads' names.
	Anonymize bool
	// Disruptions says the recording holds the disruptions that ended
	// pods (berth record --watch writes the spot interruptions it sees),
	// so that a replay ends those pods again: a pod a disruption ended
	// (its DisruptionTarget condition) then counts only the work its
	// Job's checkpoint saved, and the row's duration is the work the Job
	// needed. False counts every pod's whole run: the GPU-hours the
	// cluster spent, for a replay that interrupts nothing.
	Disruptions bool
}

// Row is one recorded row: the trace's job, and when it was submitted
// (Job.Submit is left zero: a recording has times, not offsets).
type Row struct {
	trace.Job
	At time.Time
	// UID is the recorded object's, so that a watch writes it once.
	UID string
}

// Recording is the rows recorded and what was not.
type Recording struct {
	// Rows, in order of At (then team and name).
	Rows    []Row
	Summary Summary
}

// Convert records c: a row per finished Job and per GPU service, and a
// summary of the rest.
func Convert(c Cluster, o Options) *Recording {
	r := newRecorder(c, o)
	var rec Recording
	for i := range c.Jobs {
		if row, ok := r.job(&c.Jobs[i]); ok {
			rec.Rows = append(rec.Rows, row)
		}
	}
	for i := range c.Deployments {
		d := &c.Deployments[i]
		if row, ok := r.service("Deployment", d.ObjectMeta, d.Spec.Replicas, &d.Spec.Template); ok {
			rec.Rows = append(rec.Rows, row)
		}
	}
	for i := range c.StatefulSets {
		s := &c.StatefulSets[i]
		if row, ok := r.service("StatefulSet", s.ObjectMeta, s.Spec.Replicas, &s.Spec.Template); ok {
			rec.Rows = append(rec.Rows, row)
		}
	}
	r.gone(c.Events)
	sortRows(rec.Rows)
	r.names(rec.Rows)
	rec.Summary = r.summary
	rec.Summary.Problems = append(r.unmapped(), rec.Summary.Problems...)
	return &rec
}

func sortRows(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Team, b.Team), cmp.Compare(a.Name, b.Name))
	})
}

// warn is a problem of an object the recording read, with its fix.
func warn(kind, namespace, name, message, fix string) problem.Problem {
	return problem.Problem{Object: problem.Object{Kind: kind, Namespace: namespace, Name: name}, Message: message, Fix: fix, Warning: true}
}
