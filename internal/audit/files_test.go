package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"ns"},"spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"1"}}}]}}`

// Every shape of file a user has: JSON objects, Lists and streams,
// multi-document YAML with comments-only documents, YAML Lists with
// indented sequences, quoted names and owner references, and documents
// that are not Kubernetes objects.
func TestLoadShapes(t *testing.T) {
	stream := writeTemp(t, "stream.json", strings.ReplaceAll(pod, "%q", `"a"`)+"\n"+
		`{"apiVersion":"v1","kind":"List","items":[`+strings.ReplaceAll(pod, "%q", `"b"`)+`]}`+"\n"+
		`[`+strings.ReplaceAll(pod, "%q", `"c"`)+`]`)
	docs := writeTemp(t, "docs.yaml", `# only a comment
---
apiVersion: v1
kind: Pod
metadata:
  name: 'd'   # quoted
  namespace: "ns"
spec:
  containers:
  - name: c
    resources: {requests: {nvidia.com/gpu: 1}}
---
replicaCount: 3   # a values.yaml: no kind
--- # a separator with a comment
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    metadata:
      name: e
      namespace: ns
      ownerReferences:
      - {apiVersion: example.com/v1, kind: PyTorchJob, name: run, uid: "1", controller: true}
    spec:
      containers:
      - name: c
        resources:
          requests:
            nvidia.com/gpu: 1
  - apiVersion: example.com/v1
    kind: PyTorchJob
    metadata: {name: run, namespace: ns}
`)
	inv, err := LoadFiles([]string{stream, docs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range inv.Pods {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, sortedCopy(names)); diff != "" {
		t.Errorf("pods read (-want +got):\n%s", diff)
	}
	if inv.Ignored["PyTorchJob"] != 1 {
		t.Errorf("ignored %v, want the PyTorchJob", inv.Ignored)
	}
	r := Check(inv, Options{})
	lines := map[string]string{}
	for _, f := range r.Findings {
		if f.Rule == v1alpha1.RuleGPULimit {
			lines[f.Object.Name] = f.Where()
		}
	}
	want := map[string]string{
		"a": stream + ":1", "b": stream + ":2", "c": stream + ":3",
		"d": docs + ":11", // resources, the deepest part of the path the document has
		"e": docs + ":28", // inside a List item too
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("gpu-limit findings (-want +got):\n%s", diff)
	}
}

// Broken files are reported with where they break, all of them, and
// nothing is audited.
func TestLoadProblems(t *testing.T) {
	badYAML := writeTemp(t, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [y\n")
	badJSON := writeTemp(t, "bad.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}`)
	badType := writeTemp(t, "type.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: three}\n")
	badPod := writeTemp(t, "pod.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":"nope"}}`)
	_, err := LoadFiles([]string{badYAML, badJSON, badType, badPod}, nil)
	if err == nil {
		t.Fatal("broken files were audited")
	}
	for _, want := range []string{
		"4 manifest(s) could not be read",
		badYAML + ":6: not valid YAML: yaml: line 9: did not find expected ',' or ']'",
		badJSON + ":1: not valid JSON: malformed JSON object at byte 55",
		badType + ":1: Deployment: json: cannot unmarshal string",
		badPod + ":1: Pod: json: cannot unmarshal string into Go struct field PodSpec.containers",
		"fix: correct them",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := LoadFiles([]string{"testdata/missing"}, nil); err == nil || !strings.Contains(err.Error(), "fix:") {
		t.Errorf("a missing path: %v", err)
	}
}

// Documents are decoded as the API server decodes them: a field whose name
// is spelt in another case is not that field.
func TestUnmarshalIsCaseSensitive(t *testing.T) {
	var p corev1.Pod
	if err := unmarshal([]byte(`{"metadata":{"Name":"x","namespace":"ns"},"spec":{"Containers":[{"name":"c"}]}}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "" || len(p.Spec.Containers) != 0 || p.Namespace != "ns" {
		t.Errorf("decoded name %q, %d containers, namespace %q; want only the namespace", p.Name, len(p.Spec.Containers), p.Namespace)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// lineAt counts lines by blocks; every offset, at and around the blocks'
// edges, gets the line a count from the start of the file gives.
func TestLineAt(t *testing.T) {
	var data []byte
	for i := 0; len(data) < 3*lineBlock+100; i++ {
		data = append(data, strings.Repeat("x", i%97)...)
		data = append(data, '\n')
		if i%5 == 0 {
			data = append(data, '\n') // blank lines too
		}
	}
	for _, size := range []int{0, 1, lineBlock, lineBlock + 1, 2 * lineBlock, len(data)} {
		f := &file{name: "f", data: data[:size]}
		for off := 0; off <= size; off++ {
			if want := 1 + bytes.Count(data[:off], []byte{'\n'}); f.lineAt(off) != want {
				t.Fatalf("file of %d bytes: line at %d is %d, want %d", size, off, f.lineAt(off), want)
			}
		}
	}
}
