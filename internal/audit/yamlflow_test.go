package audit

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	goyaml "go.yaml.in/yaml/v3"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/audit/corpus"
)

// A finding in a flow-style document is at the line of its field, in a
// multi-line flow mapping as in a block one.
func TestFlowFindingLines(t *testing.T) {
	path := writeTemp(t, "flow.yaml", `--- # by hand
{
  apiVersion: v1, kind: Pod,
  metadata: {name: a, namespace: ns},
  spec: {containers: [
    {name: c,
     resources: {requests: {nvidia.com/gpu: 1}}}
  ]}
}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: ns}
spec:
  containers:
  - {name: c, image: i}
  - name: d
    resources: {requests: {nvidia.com/gpu: 1}}
---
{apiVersion: v1, kind: Pod, metadata: {name: c, namespace: ns}, spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: 1}}}]}}
`)
	r := loadAndCheck(t, Options{}, path)
	lines := map[string]int{}
	for _, f := range r.Findings {
		if f.Rule == v1alpha1.RuleGPULimit {
			lines[f.Object.Name] = f.Line
		}
	}
	// resources, the deepest part of the path the document has
	if diff := cmp.Diff(map[string]int{"a": 7, "b": 18, "c": 20}, lines); diff != "" {
		t.Errorf("gpu-limit findings' lines (-want +got):\n%s", diff)
	}
}

// Every finding on the flow-style corpus is at the line yaml.v3 finds
// its field on, as when such documents were parsed for their lines, and
// each of its pods was read by blockToJSON, not the generic parser.
func TestFlowCorpusLines(t *testing.T) {
	dir := t.TempDir()
	if _, err := corpus.Write(dir, corpus.Spec{Nodes: 20, Pods: 400, PodsPerWorkload: 4, YAML: true, Stream: true, Bare: true, Minimal: true, Flow: true}); err != nil {
		t.Fatal(err)
	}
	inv, err := LoadFiles([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := Check(inv, Options{})
	inside := 0
	for _, f := range r.Findings {
		src, ok := inv.sources[f.Object]
		if !ok || f.Object.Kind != "Pod" || filepath.Base(f.File) != "pods-000.yaml" {
			continue
		}
		root := new(goyaml.Node)
		if err := goyaml.Unmarshal(src.doc, root); err != nil {
			t.Fatal(err)
		}
		if want := src.line + nodeLine(root, pathSteps(f.Field)) - 1; f.Line != want {
			t.Errorf("%s %s %s: line %d, yaml.v3 %d", f.Rule, f.Object, f.Field, f.Line, want)
		}
		if f.Line > src.line {
			inside++
		}
		if !src.block {
			t.Errorf("%s was converted by sigs.k8s.io/yaml:\n%s", f.Object, src.doc)
		}
	}
	if inside < 100 {
		t.Errorf("%d pod findings below their document's first line, want hundreds", inside)
	}
}
