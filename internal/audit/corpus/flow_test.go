package corpus

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The pods written in flow style are the pods written in block style:
// sigs.k8s.io/yaml reads each document of the two streams as the same
// pod, and every flow style is used.
func TestFlowPodsAreBlockPods(t *testing.T) {
	read := func(flow bool) (pods []string, docs [][]byte) {
		dir := t.TempDir()
		if _, err := Write(dir, Spec{Nodes: 4, Pods: 40, PodsPerWorkload: 4, YAML: true, Stream: true, Bare: true, Minimal: true, Flow: flow}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "pods-000.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range bytes.Split(data, []byte("---\n"))[1:] {
			js, err := yaml.YAMLToJSON(d)
			if err != nil {
				t.Fatalf("%v in:\n%s", err, d)
			}
			var p corev1.Pod
			if err := json.Unmarshal(js, &p); err != nil {
				t.Fatalf("%v in:\n%s", err, d)
			}
			b, _ := json.Marshal(p)
			pods, docs = append(pods, string(b)), append(docs, d)
		}
		return pods, docs
	}
	block, _ := read(false)
	flow, docs := read(true)
	if diff := cmp.Diff(block, flow); diff != "" {
		t.Errorf("the pods differ (-block +flow):\n%s", diff)
	}
	if len(flow) != 40 {
		t.Errorf("%d pods, want 40", len(flow))
	}
	// Each style's mark: a flow document, on one line or several; flow
	// on the keys' lines; "- {" items; flow leaves under block keys.
	for _, mark := range []string{"{apiVersion: v1,", "{\n  # written by hand\n  \"apiVersion\": \"v1\",", "\nspec: {containers: [{", "\n  - {name: ", "\n      limits: {"} {
		n := 0
		for _, d := range docs {
			if bytes.Contains(append([]byte("\n"), d...), []byte(mark)) {
				n++
			}
		}
		if n != len(docs)/int(flowStyles) {
			t.Errorf("%d documents hold %q, want %d", n, mark, len(docs)/int(flowStyles))
		}
	}
}
