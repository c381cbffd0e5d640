// Package kueue runs Kueue's own controllers, scheduler and webhooks
// (sigs.k8s.io/kueue) inside `berth up` for a blueprint with
// queueing: Kueue, as Kueue's binary (cmd/kueue) wires them: its CRDs
// from the module (manifests/, checked against the module by a test),
// a Configuration built in process rather than read from a file, no
// leader election, no metrics or health ports, and its webhooks served
// on loopback with a certificate from the cluster's CA and registered
// with the API server by URL. Suspension, admission, flavor
// assignment, borrowing and preemption are Kueue's decisions; nothing
// here makes one.
package kueue
