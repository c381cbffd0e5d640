package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/problem"
)

// kueueBlueprint writes the retail template with queueing: Kueue in dir,
// and returns its path and queueing's line.
func kueueBlueprint(t *testing.T, dir string) (string, int) {
	t.Helper()
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "kueue.yaml")
	doc := strings.Replace(string(raw), "  pools:\n", "  queueing: Kueue\n  pools:\n", 1)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, strings.Count(doc[:strings.Index(doc, "  queueing: Kueue")], "\n") + 1
}

// berth rehearse refuses a blueprint that queues with Kueue before it
// starts a cluster, at spec.queueing's line, for -f and --vs alike; berth
// up takes it (it runs Kueue), and rehearse takes the blueprint under
// ResourceQuota.
func TestRehearseRefusesKueue(t *testing.T) {
	dir := t.TempDir()
	kueue, line := kueueBlueprint(t, dir)
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
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
		if p.File != kueue || p.Line != line || p.Field != "spec.queueing" || !strings.Contains(p.Message, "berth rehearse does not run yet") || !strings.Contains(p.Fix, "queueing: ResourceQuota") {
			t.Errorf("%s: %s:%d %s: %s (fix %s); want %s:%d spec.queueing, why and the fix", what, p.File, p.Line, p.Field, p.Message, p.Fix, kueue, line)
		}
	}
	refused("berth rehearse -f", (&rehearseOptions{Streams: streams, file: kueue, tracePath: trace, output: "table"}).Complete())
	refused("berth rehearse --vs", (&rehearseOptions{Streams: streams, file: retail, vs: kueue, tracePath: trace, output: "table"}).Complete())
	if err := (&rehearseOptions{Streams: streams, file: retail, tracePath: trace, output: "table"}).Complete(); err != nil {
		t.Errorf("berth rehearse -f of the retail template under ResourceQuota: %v", err)
	}
}

// berth up runs Kueue for a blueprint that queues with it, as berth-kueue:
// where that binary is nowhere to be found, up says so before a cluster
// starts, at spec.queueing's line, with how to build it.
func TestUpFindsBerthKueue(t *testing.T) {
	dir := t.TempDir()
	kueue, line := kueueBlueprint(t, dir)
	streams := Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	up := func() error {
		return (&upOptions{Streams: streams, file: kueue, stateDir: filepath.Join(dir, "state")}).Complete()
	}
	t.Setenv(cluster.KueueBinaryEnv, "")
	t.Setenv("PATH", dir)
	var p *problem.Problem
	if err := up(); !errors.As(err, &p) {
		t.Fatalf("berth up -f with no berth-kueue: error %v; want the problem at spec.queueing", err)
	}
	if p.File != kueue || p.Line != line || p.Field != "spec.queueing" || !strings.Contains(p.Message, "berth-kueue") || !strings.Contains(p.Fix, "go build -o bin/ ./cmd/berth ./cmd/berth-kueue") {
		t.Errorf("%s:%d %s: %s (fix %s); want %s:%d spec.queueing, why and the fix", p.File, p.Line, p.Field, p.Message, p.Fix, kueue, line)
	}
	binary := filepath.Join(dir, "berth-kueue")
	if err := os.WriteFile(binary, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := up(); err != nil {
		t.Errorf("berth up -f with berth-kueue on PATH: %v", err)
	}
	t.Setenv("PATH", "")
	t.Setenv(cluster.KueueBinaryEnv, binary)
	if err := up(); err != nil {
		t.Errorf("berth up -f with %s=%s: %v", cluster.KueueBinaryEnv, binary, err)
	}
}
