package trace

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/internal/scaffold"
)

// Kinds of job a trace runs: the kinds `berth new` writes.
const (
	Training  = scaffold.Training
	Batch     = scaffold.Batch
	Inference = scaffold.Inference
)

// Trace is a workload to rehearse: jobs submitted over time, and the
// traffic and queue depths its inference services and batch workers see.
type Trace struct {
	// Start is the wall-clock time the trace's offsets count from. Zero
	// when the trace gave only offsets: it then has no date, and only the
	// offsets mean anything.
	Start time.Time
	// Jobs are the trace's rows, in order of Submit (rows submitted at
	// the same moment in the order they were written).
	Jobs []Job
	// Load is the traffic on the inference services and the depth of
	// the queues over the trace: a `berth load play` profile whose step
	// times are offsets from Start. Nil means no load: services see no
	// traffic and queues stay empty.
	Load *metricsapi.Profile
	// Queues give the items of the queues Load fills a processing time,
	// so that a queue drains as its workers run. A queue Load fills that
	// is not listed here never drains, as under `berth load play`.
	Queues []Queue
	// Interruptions take spot capacity away at given times, as a cloud
	// reclaims it: what a design does with work that loses its node at a
	// known moment. Nil means none beyond the random ones a pool's
	// spot.meanTimeBetweenInterruptions makes.
	Interruptions []Interruption
	// Drains empty pools' nodes at given times, as a node upgrade or a
	// blue/green replacement does: what a design's budgets keep up while
	// it happens. Nil means none.
	Drains []Drain
	// RecordedWaits are the waits the source trace recorded, by job
	// (Team + "/" + Name): how long each job waited between its
	// submission and its start on the cluster the source came from, for
	// a report to set beside the rehearsal's. Neither form holds them
	// (the CSV header is fixed): an import writes them beside the trace
	// (WriteWaits) and ReadWaits puts them back. Nil means none recorded;
	// a job without an entry has none.
	RecordedWaits map[string]time.Duration

	// file and lines place the YAML form's fields, for Check's problems
	// with Load; empty for a CSV trace and for an import.
	file  string
	lines blueprint.Lines
}

// Job is one row of a trace.
//
// A training or batch row is a Job of Pods pods that each run for
// Duration once they start; work since the last checkpoint is lost when
// a pod is interrupted. An inference row is a service (a Deployment) of
// at least Pods replicas, from Submit for Duration, or to the end of the
// trace when Duration is zero.
type Job struct {
	// Submit is when the job is submitted, as an offset from the trace's
	// Start. Zero is the start.
	Submit time.Duration
	// Team is the blueprint team that submits it; the job runs in the
	// team's first namespace, as `berth new` places it. Never empty in a
	// parsed trace.
	Team string
	// Kind is Training, Batch or Inference. Never empty in a parsed
	// trace.
	Kind scaffold.Kind
	// Name names the Job or Deployment: a DNS-1123 label, unique among
	// the team's rows. Never empty in a parsed trace.
	Name string
	// Pods is the parallelism: a Job's pods, a service's fewest replicas.
	// At least 1 in a parsed trace.
	Pods int32
	// GPUs is each pod's GPUs, whole. Zero means none.
	GPUs int64
	// CPU and Memory are each pod's requests. Zero means what `berth new`
	// asks for a pod of the kind (scaffold.Requests).
	CPU, Memory resource.Quantity
	// Duration is how long each pod runs once started. Never zero for
	// training and batch; zero for inference means to the end of the
	// trace (End).
	Duration time.Duration
	// Checkpoint is how often a training or batch pod saves its work: an
	// interruption loses the work since the last checkpoint. Zero means
	// none: an interruption loses all of it. Always less than Duration.
	Checkpoint time.Duration
	// Class is the blueprint class the job runs under. Empty means the
	// class `berth new` picks for the kind and team (scaffold.DefaultClass).
	Class string
	// Model is the model an inference service follows, NAME@ALIAS or
	// NAME:VERSION, for the berth.io/model annotation. Empty means none.
	Model string

	// File and Line say where the row was read from: a trace file, or an
	// imported source. Empty and 0 for a job made in code.
	File string
	Line int
}

// Queue is the processing time of a queue's items.
type Queue struct {
	// Name is the queue as Load's steps name it (their queues: keys).
	Name string
	// ItemTime is how long one worker takes over one item: n workers
	// take n items off the queue every ItemTime. Always more than zero in
	// a parsed trace.
	ItemTime time.Duration
	// Team, when set, runs the queue's worker from the trace's start:
	// the Deployment and HPA `berth new batch` writes for the team, named
	// Worker(), scaled on the queue's depth (to zero once it stays
	// empty). Empty means no worker: the queue drains only as workers
	// the trace does not make run.
	Team string
	// Class is the worker's class. Empty means the class `berth new`
	// picks for a batch worker (one with a queue first); a class with its
	// own scaling.queue must drain this queue.
	Class string

	// Line is the entry's line in the trace file; 0 for one made in
	// code.
	Line int
}

// Worker is the name of the queue's worker: the queue's name and
// "-worker".
func (q Queue) Worker() string { return q.Name + "-worker" }

// Interruption is spot capacity taken away at a moment of the trace:
// every node of Pool up at At gets the pool's interruption notice, as
// `berth spot interrupt --pool` gives it. Their pods are told to stop
// (DisruptionTarget) and fail when the notice ends, the nodes go, and
// the Jobs' replacements wait for the autoscaler's new nodes.
type Interruption struct {
	// At is when, as an offset from the trace's Start.
	At time.Duration
	// Pool is a Spot pool of the blueprint. Never empty in a parsed
	// trace.
	Pool string

	// Line is the entry's line in the trace file; 0 for one made in
	// code.
	Line int
}

// Drain is a pool's nodes replaced at a moment of the trace, as berth
// replaces them: every node of Pool up at At is cordoned, then each in
// turn drained through the Eviction API (so budgets hold pods back until
// their replacements run elsewhere) and deleted. The autoscaler adds
// nodes for what waits.
type Drain Interruption

// End is the trace's length: when its last job ends (a training or
// batch job's Submit plus Duration, an inference service's end if it has
// one), its last submission, its load's last step, or its last
// interruption or drain, whichever is latest.
// An inference service without a Duration runs to End. The rehearsal's
// waits push the jobs' real ends later; End is the trace's own.
func (t *Trace) End() time.Duration {
	var end time.Duration
	for _, j := range t.Jobs {
		end = max(end, j.Submit+j.Duration)
	}
	if t.Load != nil {
		end = max(end, t.Load.Length())
	}
	for _, i := range t.Interruptions {
		end = max(end, i.At)
	}
	for _, d := range t.Drains {
		end = max(end, d.At)
	}
	return end
}

// sortJobs orders the jobs by Submit, keeping the written order of jobs
// submitted together.
func sortJobs(jobs []Job) {
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Submit, b.Submit) })
}
