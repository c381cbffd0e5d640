// Package why explains why a pod is Pending, across every layer that can
// keep it there: the scheduler's own account, scheduling gates, each node
// pool's taints, selectors, free resources and topology spread, the
// LimitRange defaults and quota of its namespace, priority and
// preemption, and whether a pool of the blueprint could grow to hold it.
//
// It re-derives each layer from the objects rather than trusting one
// message: Explain is a pure function of a Snapshot, which Read fills
// from a cluster.
package why

import "berth.io/berth/internal/problem"

// Cause codes. A verdict's cause is one of the first three groups; the
// last group appears only among the supporting causes.
const (
	// The pod is not waiting on the scheduler, or not yet.
	CauseNotPending = "not-pending"
	CauseGated      = "scheduling-gated"
	CauseBound      = "bound"
	CausePreempting = "preempting"
	// The workload could not create its pods.
	CauseQuotaExceeded = "quota-exceeded"
	CauseCreateFailed  = "create-failed"
	// No node fits.
	CauseNoNodes      = "no-nodes"
	CauseCordoned     = "cordoned"
	CauseTaint        = "untolerated-taint"
	CauseNodeAffinity = "node-affinity"
	CauseResources    = "insufficient-resources"
	CauseLimitRange   = "limitrange-defaults"
	CauseSpread       = "topology-spread"
	CausePodAffinity  = "pod-affinity"
	CausePoolCanGrow  = "pool-can-grow"
	// GPU nodes advertise no GPUs: the device plugin does not run there.
	CauseGPUsInvisible = "gpus-not-advertised"
	// Another Filter plugin of the scheduler (NodePorts,
	// VolumeRestrictions, NodeName) rejects the pod.
	CauseFilter = "scheduler-filter"
	// The simulation of the scheduler could not run.
	CauseSimulation = "simulation-failed"
	// Some node passes every Filter plugin of the simulation: the
	// scheduler has not retried, or a plugin the simulation leaves out
	// (volume binding, dynamic resources) holds the pod.
	CauseFits = "fits"
	// Context for the verdict.
	CauseQuota           = "quota"
	CauseHeldBy          = "held-by"
	CausePriority        = "priority"
	CausePreemptNever    = "preemption-never"
	CausePreemptPossible = "preemption-possible"
	CausePreemptNoHelp   = "preemption-not-helpful"
	CausePDB             = "pdb-in-the-way"
	CausePoolAtMax       = "pool-at-max"
	CauseAutoscaler      = "autoscaler"
	CauseScalingUp       = "scaling-up"
	CauseOwnerEvents     = "owner-events"
	CauseWorkload        = "workload"
	// The HorizontalPodAutoscaler that scales the workload holds it
	// where it is: it cannot change the scale, cannot read its metric,
	// does not scale a workload put at zero by hand, cannot find its
	// pods, keeps it at zero (nothing to do), or at its maximum.
	CauseHPACannotScale = "hpa-cannot-scale"
	CauseHPAMetric      = "hpa-metric-unavailable"
	CauseHPADisabled    = "hpa-scaling-disabled"
	CauseHPASelector    = "hpa-invalid-selector"
	CauseHPAAtZero      = "hpa-at-zero"
	CauseHPAAtMax       = "hpa-at-max"
	CauseOtherScheduler = "other-scheduler"
	// The Volumes layer: a claim that keeps the pod from being scheduled.
	CauseClaimMissing  = "claim-missing"
	CauseClaimClass    = "claim-storage-class"
	CauseClaimUnbound  = "claim-unbound"
	CauseVolumeZone    = "volume-zone"
	CauseAttachLimit   = "volume-attach-limit"
	CauseClaimDeleted  = "claim-deleting"
	CauseVolumeGone    = "volume-missing"
	CauseClaimNoVolume = "claim-no-volume"

	// A Job Kueue holds suspended: waiting for quota or a flavor, or
	// preempted (its quota taken back) and waiting again (kueue.go).
	CauseQueueWaiting   = "kueue-waiting"
	CauseQueuePreempted = "kueue-preempted"
)

// Layers, in the order the text output shows them.
const (
	LayerPod        = "pod"
	LayerWorkload   = "workload"
	LayerHPA        = "hpa"
	LayerQueue      = "queue"
	LayerScheduler  = "scheduler"
	LayerVolumes    = "volumes"
	LayerPools      = "pools"
	LayerLimitRange = "limitrange"
	LayerQuota      = "quota"
	LayerPriority   = "priority"
	LayerAutoscale  = "autoscale"
)

var layerOrder = []string{LayerPod, LayerWorkload, LayerQueue, LayerHPA, LayerScheduler, LayerVolumes, LayerPools, LayerLimitRange, LayerQuota, LayerPriority, LayerAutoscale}

// Verdict is the explanation of one pod, or of one workload's pods: the
// top cause with its fix, then what each layer says.
type Verdict struct {
	// Pod is NAMESPACE/NAME; empty for a workload that has no pods.
	Pod string `json:"pod,omitempty"`
	// Workload is KIND/NAMESPACE/NAME when a workload was asked about, or
	// the pod's controller.
	Workload string `json:"workload,omitempty"`
	// Phase is the pod's phase; empty for a workload without pods.
	Phase string `json:"phase,omitempty"`
	// Top is the one cause that decides, with the fix.
	Top Cause `json:"verdict"`
	// Causes are the supporting findings, layer by layer.
	Causes []Cause `json:"causes"`
	// Scheduler is the scheduler's own account, quoted.
	Scheduler *SchedulerAccount `json:"scheduler,omitempty"`
	// Pools is, per node pool, how many nodes fit and why the others
	// do not, in the scheduler's filter order.
	Pools []PoolFit `json:"pools,omitempty"`
	// Quota is the namespace's ResourceQuotas, used and hard.
	Quota []QuotaUse `json:"quota,omitempty"`
	// Defaults are the requests and limits a LimitRange set on the pod.
	Defaults []Default `json:"limitRangeDefaults,omitempty"`
	// Priority is the pod's priority and where it came from.
	Priority *Priority `json:"priority,omitempty"`
}

// Cause is one finding: the layer that found it and its cause code, then
// the problem: what is wrong, with the numbers, and the fix, empty when
// there is nothing to do (context only).
type Cause struct {
	Layer string `json:"layer"`
	Code  string `json:"cause"`
	problem.Problem
}

// SchedulerAccount is what kube-scheduler said about the pod.
type SchedulerAccount struct {
	// Condition is the PodScheduled condition's reason and message.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Events are FailedScheduling (and autoscaler) events, newest last.
	Events []EventLine `json:"events,omitempty"`
}

// EventLine is one event, as `kubectl describe` shows it.
type EventLine struct {
	Object  string `json:"object"`
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Count   int32  `json:"count"`
	Age     string `json:"age,omitempty"`
	Message string `json:"message"`
}

// PoolFit is how a pool's nodes fare against the pod.
type PoolFit struct {
	Name string `json:"name"`
	// Nodes is the number of nodes the pool has now.
	Nodes int `json:"nodes"`
	// Fits is how many of them pass every Filter plugin.
	Fits int `json:"fits"`
	// Size is the pool's size range in the blueprint, "0-2" or "3";
	// empty when the blueprint does not declare the pool.
	Size string `json:"size,omitempty"`
	// Stage is the first filter its closest node fails: cordoned,
	// taints, affinity, resources, spread, another plugin by its name
	// (InterPodAffinity, NodePorts, ...), or fits.
	Stage string `json:"stage"`
	// Reasons say why nodes do not fit, with node counts and numbers.
	Reasons []string `json:"reasons,omitempty"`
	// Filters are the scheduler's Filter plugins that reject the pod on
	// the pool's nodes (or, without nodes, on its next node), each
	// reason in the plugin's own words with a node count:
	// "TaintToleration: node(s) had untolerated taint {gpu: true} (2 nodes)".
	Filters []string `json:"filters,omitempty"`
}

// QuotaUse is one resource of one ResourceQuota.
type QuotaUse struct {
	Quota    string `json:"quota"`
	Resource string `json:"resource"`
	Used     string `json:"used"`
	Hard     string `json:"hard"`
}

// Default is one request or limit a LimitRange set on a container.
type Default struct {
	LimitRange string `json:"limitRange"`
	Container  string `json:"container"`
	// Kind is "request" or "limit".
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
	Value    string `json:"value"`
}

// Priority is the pod's scheduling priority.
type Priority struct {
	Value            int32  `json:"value"`
	Class            string `json:"priorityClass,omitempty"`
	PreemptionPolicy string `json:"preemptionPolicy"`
}
