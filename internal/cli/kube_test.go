package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/recorded"
)

// A command that reads a cluster takes -f, else ./berth.yaml, else the
// blueprint the cluster recorded, whatever state directory it started
// from; several records are an error naming them.
func TestClusterBlueprintFallsBackToTheClustersRecord(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	custom := strings.Replace(string(raw), "name: retail-analytics", "name: custom", 1)
	if custom == string(raw) {
		t.Fatal("the retail template's name moved: update this test")
	}
	file := filepath.Join(dir, "custom.yaml")
	if err := os.WriteFile(file, []byte(custom), 0o644); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	none := func(problem.Problem) {}

	got, err := clusterBlueprint(ctx, client, "", none)
	if err != nil || got != nil {
		t.Fatalf("no -f, no ./berth.yaml, no record: got %v, %v; want none", got, err)
	}

	recordedBP, _, err := blueprint.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := recorded.Write(ctx, client, recordedBP); err != nil {
		t.Fatal(err)
	}
	got, err = clusterBlueprint(ctx, client, "", none)
	if err != nil || got == nil || got.Metadata.Name != "custom" || !strings.Contains(got.source, recorded.ConfigMapName("custom")) {
		t.Fatalf("with one record: got %+v, %v; want blueprint custom from its record", got, err)
	}
	if len(got.Spec.Pools) == 0 {
		t.Errorf("the recorded blueprint has no pools")
	}

	if err := os.WriteFile(filepath.Join(dir, defaultBlueprintFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err = clusterBlueprint(ctx, client, "", none); err != nil || got.source != defaultBlueprintFile {
		t.Fatalf("with ./berth.yaml: got %+v, %v; want ./berth.yaml before the record", got, err)
	}
	if got, err = clusterBlueprint(ctx, client, file, none); err != nil || got.source != file {
		t.Fatalf("with -f: got %+v, %v; want -f before all", got, err)
	}
	os.Remove(filepath.Join(dir, defaultBlueprintFile))

	other := *recordedBP
	other.Metadata.Name = "other"
	if err := recorded.Write(ctx, client, &other); err != nil {
		t.Fatal(err)
	}
	_, err = clusterBlueprint(ctx, client, "", none)
	p, ok := problem.As(err)
	if !ok || !strings.Contains(p.Message, "custom, other") || !strings.Contains(p.Fix, "-f") {
		t.Fatalf("with two records: %v; want a problem naming both and asking for -f", err)
	}
}
