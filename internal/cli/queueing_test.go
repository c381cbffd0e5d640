package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/problem"
)

// berth up and berth rehearse refuse a blueprint that queues with Kueue
// before they start a cluster, at spec.queueing's line, for -f and --vs
// alike; the same blueprint under ResourceQuota gets past the check.
func TestLocalClusterRefusesKueue(t *testing.T) {
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kueue := filepath.Join(dir, "kueue.yaml")
	doc := strings.Replace(string(raw), "  pools:\n", "  queueing: Kueue\n  pools:\n", 1)
	if err := os.WriteFile(kueue, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	line := strings.Count(doc[:strings.Index(doc, "  queueing: Kueue")], "\n") + 1
	retail := filepath.Join(dir, "retail.yaml")
	if err := os.WriteFile(retail, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	const trace = "../../examples/retail-week.csv"
	streams := Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	refused := func(what string, err error) {
		t.Helper()
		var p *problem.Problem
		if !errors.As(err, &p) {
			t.Fatalf("%s: error %v; want the problem at spec.queueing", what, err)
		}
		if p.File != kueue || p.Line != line || p.Field != "spec.queueing" || !strings.Contains(p.Message, "does not run yet") || !strings.Contains(p.Fix, "queueing: ResourceQuota") {
			t.Errorf("%s: %s:%d %s: %s (fix %s); want %s:%d spec.queueing, why and the fix", what, p.File, p.Line, p.Field, p.Message, p.Fix, kueue, line)
		}
	}
	up := &upOptions{Streams: streams, file: kueue, stateDir: filepath.Join(dir, "state")}
	refused("berth up -f", up.Complete())
	refused("berth rehearse -f", (&rehearseOptions{Streams: streams, file: kueue, tracePath: trace, output: "table"}).Complete())
	refused("berth rehearse --vs", (&rehearseOptions{Streams: streams, file: retail, vs: kueue, tracePath: trace, output: "table"}).Complete())
	if err := (&upOptions{Streams: streams, file: retail, stateDir: filepath.Join(dir, "state")}).Complete(); err != nil {
		t.Errorf("berth up -f of the retail template under ResourceQuota: %v", err)
	}
}
