package report

// Kinds of disruption a trace asks for.
const (
	KindInterruption = "interruption"
	KindDrain        = "drain"
)

// DisruptionResult is one of the trace's interruptions or drains as the
// rehearsal carried it out.
type DisruptionResult struct {
	// Kind is KindInterruption or KindDrain.
	Kind string `json:"kind"`
	// At is the trace time it was carried out.
	At   Duration `json:"at"`
	Pool string   `json:"pool"`
	// Nodes are the pool's nodes it took: those up at At. None when the
	// pool had none.
	Nodes []string `json:"nodes"`
	// Notice is the pool's spot notice, in trace time; zero for a drain.
	Notice Duration `json:"notice,omitempty"`
	// Took is how long a drain took, from At until its last node was
	// deleted (trace time); zero for an interruption, and for a drain
	// still under way when the rehearsal stopped.
	Took Duration `json:"took,omitempty"`
	// Error is why it could not be carried out (a budget that held a
	// drain back past its timeout); empty when it was.
	Error string `json:"error,omitempty"`
}
