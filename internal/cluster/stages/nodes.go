package stages

import _ "embed"

// The node stages skip a node annotated v1alpha1.AnnotationKubeletStopped
// (`berth node stop`), and berth renews no lease for it, so the node
// lifecycle controller finds it unresponsive, as it would a dead kubelet.

var (
	// NodeInitialize is KWOK's fast node-initialize stage (a node that
	// is not Ready becomes Ready), narrowed to running kubelets: without
	// that, a stopped node marked Unknown would be made Ready again.
	//go:embed node-initialize.yaml
	NodeInitialize string

	// NodeHeartbeat is KWOK's node-heartbeat-with-lease stage (a status
	// heartbeat now and then, the lease doing the rest), narrowed to
	// running kubelets.
	//go:embed node-heartbeat.yaml
	NodeHeartbeat string
)
