package cli

import (
	"strings"
	"sync"
	"testing"
)

// Two replications writing at once: each line comes out whole, with the
// prefix of the replication that wrote it, however the writes split it.
func TestPrefixWriterWritesWholeLines(t *testing.T) {
	var out strings.Builder
	var mu sync.Mutex
	a := &prefixWriter{out: &out, mu: &mu, prefix: "[seed 1] "}
	b := &prefixWriter{out: &out, mu: &mu, prefix: "[seed 2] "}
	a.Write([]byte("15m0s of 1h"))
	b.Write([]byte("starting\n"))
	a.Write([]byte(" of trace\nReplayed"))
	a.flush()
	want := "[seed 2] starting\n[seed 1] 15m0s of 1h of trace\n[seed 1] Replayed\n"
	if out.String() != want {
		t.Errorf("wrote %q; want %q", out.String(), want)
	}
}

// --vs, --vs-provisioner and --vs-queueing each make a second design of
// the first with only what they name changed.
func TestDesignsOfAComparison(t *testing.T) {
	o := rehearseOptions{file: "a.yaml", provisioner: "Karpenter", queueing: "ResourceQuota"}
	if d := o.designs(); len(d) != 1 || d[0] != (design{"a.yaml", "Karpenter", "ResourceQuota"}) {
		t.Errorf("designs %v; want a.yaml alone, as its flags say", d)
	}
	o.vsQueueing = "Kueue"
	if d := o.designs(); len(d) != 2 || d[1] != (design{"a.yaml", "Karpenter", "Kueue"}) {
		t.Errorf("designs %v; want a.yaml under Kueue second", d)
	}
	o.vs = "b.yaml"
	if d := o.designs(); len(d) != 2 || d[1] != (design{"b.yaml", "Karpenter", "Kueue"}) {
		t.Errorf("designs %v; want b.yaml under Kueue second", d)
	}
}
