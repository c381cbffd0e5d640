package report

import (
	"strings"

	"berth.io/berth/internal/rehearse/cost"
)

// Report is what a rehearsal measured, in trace time: waits and run
// times as the trace would have seen them, hours as trace hours. Every
// moment is read off the cluster's virtual clock, which stands still
// while the cluster works: the figures are the design's, the same at any
// speed and on any machine.
type Report struct {
	// Blueprint is the blueprint's name; Trace the trace's file.
	Blueprint string `json:"blueprint"`
	// Provisioner is what provisioned the User pools' nodes:
	// ClusterAutoscaler (berth's node autoscaler) or Karpenter.
	Provisioner string `json:"provisioner,omitempty"`
	// Queueing is what held each team's work to its quota:
	// ResourceQuota or Kueue.
	Queueing string `json:"queueing,omitempty"`
	Trace    string `json:"trace"`
	// Speed is the clock's ceiling in seconds of trace per second of
	// wall time; zero when it ran as fast as the cluster settled.
	Speed float64 `json:"speed"`
	Seed  int64   `json:"seed"`
	// Rehearsed is the trace time the rehearsal covered; Wall the wall
	// time the replay took.
	Rehearsed Duration `json:"rehearsed"`
	Wall      Duration `json:"wall"`
	// Tolerance is the clock's step: every moment of a rehearsal is a
	// multiple of it (timers round up to it), so a wait or run time is
	// exact to within it. A rerun with the same blueprint, trace and seed
	// gives the same report, at any speed.
	Tolerance Duration `json:"tolerance"`
	// Clock is what the clock did: its steps, and how long the cluster
	// took to settle before each.
	Clock ClockReport `json:"clock"`
	// Partial marks a rehearsal stopped before its end (Ctrl-C).
	Partial  bool            `json:"partial,omitempty"`
	Jobs     []JobResult     `json:"jobs"`
	Groups   []GroupResult   `json:"groups"`
	Pools    []PoolResult    `json:"pools"`
	Services []ServiceResult `json:"services,omitempty"`
	Storage  []StorageResult `json:"storage,omitempty"`
	// Queues are the teams' queues, under Kueue.
	Queues []QueueResult `json:"queues,omitempty"`
	// Disruptions are the trace's interruptions as carried out.
	Disruptions []DisruptionResult `json:"disruptions,omitempty"`
	// RecordedWaits set each team's waits beside those its trace
	// recorded, over the jobs with a recorded wait; nil when the trace
	// recorded none.
	RecordedWaits []RecordedWaitResult `json:"recordedWaits,omitempty"`
	Cost          *cost.Report         `json:"cost,omitempty"`
	Series        *Series              `json:"series,omitempty"`
	// Notes are what the reader should know about the figures (an unset
	// provisioning time, unfinished jobs).
	Notes []string `json:"notes,omitempty"`
}

// ClockReport is what the rehearsal's clock did, in wall time where it
// says so: what the machine spent, which moves no figure.
type ClockReport struct {
	// Step is the clock's resolution.
	Step Duration `json:"step"`
	// Steps counts the clock's advances, each to the next timer due once
	// the cluster had settled; Timers the timers they fired.
	Steps  int `json:"steps"`
	Timers int `json:"timers"`
	// Settling is the wall time spent waiting for the cluster to settle,
	// in all; MaxSettle the longest wait before one step.
	Settling  Duration `json:"settling"`
	MaxSettle Duration `json:"maxSettle"`
	// Quiet is the longest quiet window the clock waited out to call the
	// cluster settled (it grows when the machine wakes sleepers late).
	Quiet Duration `json:"quiet"`
	// Where the settling went (wall time): waiting for counted work
	// (requests in flight, callbacks, probes) to end, for the process's
	// goroutines to stop running, out the grace after a refused request
	// whose client retries on the wall clock, and in quiet windows.
	Counted Duration `json:"counted"`
	Running Duration `json:"running"`
	Grace   Duration `json:"grace"`
	Windows Duration `json:"windows"`
	// Gated counts the pods the scheduler placed one at a time, each once
	// the rest had settled.
	Gated int `json:"gated"`
	// WaitedOn is where the counted wait went, longest first: "requests
	// sent by kube-controller-manager 1m2s".
	WaitedOn []string `json:"waitedOn,omitempty"`
	// Causes are the components whose timers stopped the clock, the one
	// the cluster spent the most settling after first: what bounded the
	// replay's steps.
	Causes []ClockCause `json:"causes,omitempty"`
	// Requests are the API server's requests by verb and resource, the
	// longest served first: what bounded its settling.
	Requests []RequestCount `json:"requests,omitempty"`
	// Late counts what the clock stepped past before it was done: the
	// pods and nodes the rehearsal's recorder first saw at a later moment
	// than the API server stamped them created at, and the Job
	// controller's syncs that set a delay at a later moment than they
	// began (the queue counts the delay from the sync's start, so that
	// one keeps its timing). Zero in a replay the seed repeats; any other
	// count says that this run's figures may differ from another's on
	// the same seed.
	Late int `json:"late,omitempty"`
}

// ClockCause is what one component's timers did to the clock.
type ClockCause struct {
	Component string `json:"component"`
	// Moments counts the moments at which a timer of the component
	// fired; Alone those at which no other component's did (the moments
	// the clock would skip without it); Timers its timers fired.
	Moments int `json:"moments"`
	Alone   int `json:"alone"`
	Timers  int `json:"timers"`
	// Settling is its share of the wall time the cluster took to settle
	// after its timers fired, shared evenly with the components whose
	// timers fired with its.
	Settling Duration `json:"settling"`
}

// RequestCount is the requests of one verb and resource the rehearsal's
// API server served.
type RequestCount struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// Count counts them, Refused those answered with an error (a pod
	// the quota refused); Served is the wall time the server took on
	// them in all.
	Count   int      `json:"count"`
	Refused int      `json:"refused,omitempty"`
	Served  Duration `json:"served"`
}

// QueueResult is a team's queue under Kueue: how long its Jobs waited
// suspended, what it borrowed and lent, and the preemptions Kueue made
// of its Jobs.
type QueueResult struct {
	Team string `json:"team"`
	// Suspended is the time the team's Jobs spent suspended in its
	// queue, added up (job-time), and SuspendedMax the most one Job
	// spent.
	Suspended    Duration `json:"suspended"`
	SuspendedMax Duration `json:"suspendedMax"`
	// BorrowedGPUHours are GPU-hours its Jobs used beyond its own GPUs
	// on a pool (its ClusterQueue's nominal quota there); LentGPUHours
	// its own GPUs the other teams' Jobs used while it left them unused:
	// what the teams borrowed on a pool, shared among those with GPUs
	// unused there in proportion to them (Kueue borrows from the cohort,
	// not from one team).
	BorrowedGPUHours float64 `json:"borrowedGPUHours"`
	LentGPUHours     float64 `json:"lentGPUHours"`
	// Preemptions Kueue made of the team's Jobs, by its reason: another
	// team reclaiming its own GPUs, a Job of higher priority in the same
	// queue, fair sharing, or another.
	PreemptedReclaim     int `json:"preemptedReclaim"`
	PreemptedPriority    int `json:"preemptedPriority"`
	PreemptedFairSharing int `json:"preemptedFairSharing"`
	PreemptedOther       int `json:"preemptedOther,omitempty"`
}

// Job states.
const (
	Completed  = "completed"
	Failed     = "failed"
	Refused    = "refused"
	Unfinished = "unfinished"
)

// JobResult is one training or batch row as the cluster ran it.
type JobResult struct {
	Team  string `json:"team"`
	Class string `json:"class"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Pods  int32  `json:"pods"`
	GPUs  int64  `json:"gpus"`
	// Submitted is the row's submit time.
	Submitted Duration `json:"submitted"`
	// Wait is from submission until every pod of its parallelism has
	// started (at once for a gang; the last to start when only some could
	// run at a time); nil when that never happened.
	Wait *Duration `json:"wait,omitempty"`
	// Run is from then to the Job's end.
	Run   *Duration `json:"run,omitempty"`
	State string    `json:"state"`
	// Refused is admission's refusal of the Job, word for word.
	Refused       string `json:"refused,omitempty"`
	Preemptions   int    `json:"preemptions"`
	Interruptions int    `json:"interruptions"`
	// Requeued counts its pods that ended because Kueue suspended the
	// Job again to take its quota back (a preemption Kueue made, not the
	// scheduler).
	Requeued int `json:"requeued,omitempty"`
	// BackoffFailures are its pods that failed and counted against the
	// Job's backoffLimit (its status.failed): an interruption the class's
	// pod failure policy ignores is not one.
	BackoffFailures int `json:"backoffFailures"`
	// LostGPUHours is work done and not checkpointed by pods that ended
	// early, times their GPUs.
	LostGPUHours float64 `json:"lostGPUHours"`
	// QuotaRefused is how long the team's quota kept its pods from being
	// created.
	QuotaRefused Duration `json:"quotaRefused"`
	// RanOn is the pools its pods started on, in order: [spot-gpu, gpu]
	// for a job interrupted on spot that resumed on demand.
	RanOn []string `json:"ranOn,omitempty"`
	// Claimed marks checkpointed training with its checkpoint claim: its
	// pods run only in its volume's zone. Replacements are the pods that
	// started in place of ones that ended early, and ReplacementWait how
	// long they waited to start, in all (nil for a Job without a claim).
	Claimed         bool      `json:"claimed,omitempty"`
	Replacements    int       `json:"replacements,omitempty"`
	ReplacementWait *Duration `json:"replacementWait,omitempty"`
	// RecordedWait is the wait the trace recorded for the row on the
	// cluster it came from (its TRACE.waits.csv), to set beside Wait;
	// nil when it recorded none.
	RecordedWait *Duration `json:"recordedWait,omitempty"`
}

// StorageResult is one storage class's volumes over the rehearsal, each
// from its provisioning to its deletion or the end.
type StorageResult struct {
	Class    string  `json:"class"`
	Volumes  int     `json:"volumes"`
	PeakGiB  float64 `json:"peakGiB"`
	GiBHours float64 `json:"gibHours"`
	// PricePerGiBMonth is the class's spec.storage.classes[]
	// pricePerGiBMonth, and Cost the GiB-hours at that price (a month
	// counted as 730 hours, as the clouds bill); both nil without one.
	PricePerGiBMonth *float64 `json:"pricePerGiBMonth,omitempty"`
	Cost             *float64 `json:"cost,omitempty"`
}

// GroupResult sums a team's jobs of one class.
type GroupResult struct {
	Team       string `json:"team"`
	Class      string `json:"class"`
	Jobs       int    `json:"jobs"`
	Completed  int    `json:"completed"`
	Failed     int    `json:"failed"`
	Refused    int    `json:"refused"`
	Unfinished int    `json:"unfinished"`
	// Waits are over the jobs whose pods all ran; NeverRan counts the
	// others (refused, or still waiting at the end).
	NeverRan int      `json:"neverRan"`
	WaitP50  Duration `json:"waitP50"`
	WaitP95  Duration `json:"waitP95"`
	WaitMax  Duration `json:"waitMax"`
	// QuotaRefused is the sum of its jobs' quota-refused times: job-hours
	// of refusal, not a span of time (four jobs refused together for an
	// hour give 4h).
	QuotaRefused Duration `json:"quotaRefused"`
	LostGPUHours float64  `json:"lostGPUHours"`
}

// PoolResult is one pool over the rehearsal.
type PoolResult struct {
	Name     string `json:"name"`
	Capacity string `json:"capacity"`
	// NodeHours are the pool's nodes' hours, each from its creation to
	// its deletion (or the end).
	NodeHours float64 `json:"nodeHours"`
	PeakNodes int     `json:"peakNodes"`
	// GPUHours are its nodes' GPUs' hours; Allocated those held by
	// running pods, Idle the rest: GPUs paid for and not used.
	GPUHours          float64 `json:"gpuHours"`
	GPUHoursAllocated float64 `json:"gpuHoursAllocated"`
	GPUHoursIdle      float64 `json:"gpuHoursIdle"`
	// AtZero is how long the pool had no nodes.
	AtZero Duration `json:"atZero"`
	// Teams are the hours of GPUs and CPUs each team's pods held on it.
	Teams []TeamUse `json:"teams,omitempty"`
}

// TeamUse is what a team's pods held on a pool.
type TeamUse struct {
	Team     string  `json:"team"`
	GPUHours float64 `json:"gpuHours"`
	CPUHours float64 `json:"cpuHours"`
}

// ServiceResult is one inference row's service.
type ServiceResult struct {
	Team    string `json:"team"`
	Class   string `json:"class"`
	Name    string `json:"name"`
	Refused string `json:"refused,omitempty"`
	// MeanReplicas and PeakReplicas count Ready replicas while it ran;
	// PeakRPS is the most traffic the trace sent it.
	MeanReplicas float64 `json:"meanReplicas"`
	PeakReplicas int     `json:"peakReplicas"`
	PeakRPS      float64 `json:"peakRPS"`
	// MinAvailable is its budget's; BelowBudget how long it had fewer
	// Ready replicas, from its submission (start-up included).
	MinAvailable int32    `json:"minAvailable"`
	BelowBudget  Duration `json:"belowBudget"`
}

// Design names the design a report rehearsed: its blueprint, and its
// provisioner where that is Karpenter and its queueing where that is
// Kueue (berth's node autoscaler and ResourceQuota are the defaults and
// go unsaid).
func (r *Report) Design() string {
	var also []string
	if r.Provisioner == "Karpenter" {
		also = append(also, "Karpenter")
	}
	if r.Queueing == "Kueue" {
		also = append(also, "Kueue")
	}
	if len(also) == 0 {
		return r.Blueprint
	}
	return r.Blueprint + " (" + strings.Join(also, ", ") + ")"
}

// Designs names two compared designs, each with its provisioner or
// queueing where the two differ in it alone.
func Designs(a, b *Report) (string, string) {
	if a.Blueprint == b.Blueprint && a.Provisioner != b.Provisioner && a.Queueing == b.Queueing {
		return a.Blueprint + " (" + provisionerName(a.Provisioner) + ")", b.Blueprint + " (" + provisionerName(b.Provisioner) + ")"
	}
	if a.Blueprint == b.Blueprint && a.Queueing != b.Queueing && a.Provisioner == b.Provisioner {
		return a.Blueprint + " (" + queueingName(a.Queueing) + ")", b.Blueprint + " (" + queueingName(b.Queueing) + ")"
	}
	return a.Design(), b.Design()
}

func queueingName(q string) string {
	if q == "" {
		return "ResourceQuota"
	}
	return q
}

func provisionerName(p string) string {
	if p == "" || p == "ClusterAutoscaler" {
		return "cluster-autoscaler semantics"
	}
	return p
}
