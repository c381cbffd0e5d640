// Package rehearse replays a workload trace on a blueprint's local
// cluster and measures what a platform team asks of a design: how long
// jobs wait, how busy the GPUs are, what is lost to interruptions, how
// often a service runs below its budget, and what it all costs.
//
// It stays free of the control plane: `berth rehearse` (internal/cli)
// starts the cluster from the blueprint on a simtime.Clock and hands Run
// a client of it and the same clock. Everything is measured from the
// cluster by watching it (informers on pods, nodes, Jobs, Deployments,
// budgets and events), never by sampling and never from the trace: a
// job's wait is from its submission to the moment every one of its pods
// runs, as the real scheduler, quota, priority and node autoscaler
// decided.
//
// Time is the clock's: Run drives it with a simtime.Driver, which moves
// it to the next timer once the cluster has settled, so a figure is what
// the design gives, exact to the clock's step, and the same at any speed
// ceiling and on any machine. The submitter waits on the clock's timers
// and the recorder reads the clock when an informer sees a change; no
// timestamp written on wall time is read into a figure.
package rehearse
