// Package autoscaler is berth's node autoscaler for the local cluster:
// it grows and shrinks every `autoscale` pool the way cluster-autoscaler
// does on AKS, EKS managed node groups and GKE, following its FAQ, so
// that what a rehearsal shows is what the same pool does in production.
//
// Each scan (scanInterval apart):
//
//   - Scale-up. Pods the scheduler marked unschedulable are first placed,
//     in the simulation, on the nodes that exist and the nodes already
//     coming; those that still find no place are bin-packed onto new
//     nodes of each pool that could grow (simulate.Pack, the scheduler's
//     own Filter plugins on the pool's template node, DaemonSet pods
//     included). The expander chain picks one pool; it grows by the nodes
//     the packing needs, never past max. Its nodes register after the
//     pool's provisioningTime. Pods no pool would take get
//     NotTriggerScaleUp, naming each pool and why.
//   - Scale-down, when no scale-up happened and no cooldown holds. A node
//     whose pods request less than the utilization threshold of its
//     allocatable, and whose pods could all move elsewhere (simulated
//     with the node removed), is unneeded; after scaleDownUnneededTime it
//     goes: empty nodes in bulk, others one at a time, drained through
//     the Eviction API. What keeps a node is reported on it.
//   - Status: the cluster-autoscaler-status ConfigMap and events, in
//     cluster-autoscaler's formats (package castatus).
//
// The pools and the profile come from the blueprints recorded in the
// cluster (package recorded), so an apply that changes a pool's
// bounds or the profile takes effect at the next scan.
package autoscaler
