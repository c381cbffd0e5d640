// Package simulate answers "where would this pod fit?" the way the
// kube-scheduler answers it, by running the scheduler's own Filter
// plugins over an in-memory snapshot of nodes and the pods bound to
// them.
//
// It does not restate any scheduling rule. The verdict for each node
// comes from the in-tree plugins of k8s.io/kubernetes (NodeUnschedulable,
// NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
// VolumeRestrictions, PodTopologySpread, InterPodAffinity, and, given
// the cluster's storage, VolumeZone and NodeVolumeLimits), configured
// with the default profile and plugin arguments of the kube-scheduler
// that berth runs, and driven through the scheduler framework's
// RunPreFilterPlugins and RunFilterPlugins exactly as a scheduling cycle
// drives them. A hand-written predicate drifts from the scheduler; this
// cannot, because it is the scheduler's code. Cluster-autoscaler decides
// fit the same way.
//
// VolumeZone and NodeVolumeLimits run only when the caller gives the
// cluster's volumes, storage classes and CSINodes (Cluster.Storage): a
// simulation must not answer from an empty lister. VolumeBinding is left
// out (its volume cache is filled only by a running informer's events:
// `berth why`'s Volumes layer explains an unbound claim instead), and so
// is DynamicResources (berth's simulated nodes have no devices).
//
// Three callers share it: the autoscaler (which pending pods already
// fit, and how many new nodes of a pool would hold the rest: Place and
// Pack), `berth why` (which plugin rejected a pod on each node and pool:
// Check) and apply (would a pod still fit after a change).
package simulate
