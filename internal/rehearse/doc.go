// Package rehearse replays a workload trace on a blueprint's local
// cluster and measures what a platform team asks of a design: how long
// jobs wait, how busy the GPUs are, what is lost to interruptions, how
// often a service runs below its budget, and what it all costs.
//
// It stays free of the control plane: `berth rehearse` (internal/cli)
// starts the cluster from the blueprint Compress returns and hands Run a
// client of it. Everything is measured from the cluster by watching it
// (informers on pods, nodes, Jobs, Deployments, budgets and events),
// never by sampling and never from the trace: a job's wait is from its
// submission to the moment every one of its pods runs, as the real
// scheduler, quota, priority and node autoscaler decided.
//
// Time is compressed: at speed N a trace's hour passes in 1/N hours of
// wall time. Compress divides every timer berth owns by N (run times,
// provisioning, the autoscaler's intervals and delays, spot notices and
// the mean time between interruptions, HPA windows) and Timers says which
// are left unscaled and the floor each puts under the figures. A Clock
// turns wall time back into trace time for the report.
package rehearse
