package simtime

// The phases of the components that look at the cluster and then act,
// in the order their timers fire when due at the same moment: after the
// simulated kubelets' stages and the workload controllers' other timers
// (phase 0), the trace's rows are submitted (a new Job sees the quota
// that moment's ended pods gave back, whichever the machine ran first);
// the Job controller retries the Jobs it backed off (a pod the quota
// refused, a failed pod to replace), seeing the same; the HPA controller
// syncs, and what it scales settles; then a drain looks whether its
// evicted pods have gone and run again elsewhere; then the node
// autoscaler scans (and the scheduler's queue flushes the pods left
// unschedulable), seeing the pods the moment made.
const (
	PhaseSubmit     = 1
	PhaseJobs       = 2
	PhaseHPA        = 3
	PhaseDrain      = 4
	PhaseAutoscaler = 5
)
