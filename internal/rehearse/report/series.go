package report

// Series are what changed over the rehearsal, for charts: each a step
// function of trace time, a point where its value changed.
type Series struct {
	// Nodes are each pool's nodes.
	Nodes map[string][]Point `json:"nodes"`
	// Pending counts the rehearsal's pods made and not yet running;
	// Waiting its Jobs whose pods have not all started, pods made or not
	// (a Job the quota refuses has none pending).
	Pending []Point `json:"pending"`
	Waiting []Point `json:"waiting,omitempty"`
	// TeamGPUs are the GPUs each team's pods held; Quota each team's GPU
	// quota.
	TeamGPUs map[string][]Point `json:"teamGPUs,omitempty"`
	Quota    map[string]float64 `json:"quota,omitempty"`
	// Cost is the dollars spent so far, from the priced pools' nodes.
	Cost []Point `json:"cost,omitempty"`
	// Replicas are each inference service's Ready replicas, keyed
	// TEAM/NAME, from its submission to its removal.
	Replicas map[string][]Point `json:"replicas,omitempty"`
}

// Point is a value from trace time T on.
type Point struct {
	T Duration `json:"t"`
	V float64  `json:"v"`
}
