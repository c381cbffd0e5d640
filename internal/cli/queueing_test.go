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

// berth rehearse runs Kueue for a blueprint that queues with it, as
// berth up does: where berth-kueue is nowhere, it says so before a
// cluster starts, at spec.queueing's line, for -f; for --queueing Kueue
// and --vs-queueing Kueue on a blueprint under ResourceQuota, with the
// fix. --queueing ResourceQuota rehearses the Kueue blueprint without
// it; a queueing berth does not run is refused by name.
func TestRehearseFindsBerthKueue(t *testing.T) {
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
	rehearse := func(o rehearseOptions) error {
		o.Streams, o.tracePath, o.output = streams, trace, "table"
		return o.Complete()
	}
	t.Setenv(cluster.KueueBinaryEnv, "")
	t.Setenv("PATH", dir)
	missing := func(what string, err error, file string, line int) {
		t.Helper()
		var p *problem.Problem
		if !errors.As(err, &p) {
			t.Fatalf("%s with no berth-kueue: error %v; want the problem at spec.queueing", what, err)
		}
		if p.File != file || p.Line != line || p.Field != "spec.queueing" || !strings.Contains(p.Message, "berth-kueue") || !strings.Contains(p.Fix, "go build -o bin/ ./cmd/berth ./cmd/berth-kueue") {
			t.Errorf("%s: %s:%d %s: %s (fix %s); want %s:%d spec.queueing, why and the fix", what, p.File, p.Line, p.Field, p.Message, p.Fix, file, line)
		}
	}
	missing("berth rehearse -f kueue.yaml", rehearse(rehearseOptions{file: kueue}), kueue, line)
	// The retail template has no queueing line: the problem is at spec's.
	spec := strings.Count(string(raw[:bytes.Index(raw, []byte("\nspec:"))+1]), "\n") + 1
	missing("berth rehearse --queueing Kueue", rehearse(rehearseOptions{file: retail, queueing: "Kueue"}), retail, spec)
	var p *problem.Problem
	if err := rehearse(rehearseOptions{file: retail, vsQueueing: "Kueue"}); !errors.As(err, &p) || p.Field != "spec.queueing" || !strings.Contains(p.Fix, "./cmd/berth-kueue") {
		t.Errorf("berth rehearse --vs-queueing Kueue with no berth-kueue: %v; want the problem with how to build it", err)
	}
	if err := rehearse(rehearseOptions{file: kueue, queueing: "ResourceQuota"}); err != nil {
		t.Errorf("berth rehearse -f kueue.yaml --queueing ResourceQuota: %v", err)
	}
	if err := rehearse(rehearseOptions{file: retail, vsQueueing: "Slurm"}); err == nil || !strings.Contains(err.Error(), `--vs-queueing "Slurm"`) {
		t.Errorf("berth rehearse --vs-queueing Slurm: %v; want it refused by name", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "berth-kueue"), nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := rehearse(rehearseOptions{file: retail, vsQueueing: "Kueue"}); err != nil {
		t.Errorf("berth rehearse --vs-queueing Kueue with berth-kueue on PATH: %v", err)
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
