// Package karpenter runs Karpenter's own controllers inside `berth up`
// for a blueprint with spec.provisioner: Karpenter: provisioning,
// disruption (consolidation, emptiness, drift, expiration) and the node
// and NodeClaim lifecycles, from sigs.k8s.io/karpenter, wired as its
// operator wires them but without its flags, leader election, ports or
// loggers (Run), on the NodePools `berth export --target karpenter`
// writes (Install). Its cloud provider (CloudProvider) is berth's: the
// blueprint's pools are the instance types, and what it launches are
// berth's simulated nodes.
package karpenter
