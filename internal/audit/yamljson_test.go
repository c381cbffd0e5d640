package audit

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	goyaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"berth.io/berth/internal/audit/corpus"
)

// blockToJSON must read every document it accepts as sigs.k8s.io/yaml
// does, and accept the documents kubectl and the corpus write.
func TestBlockToJSON(t *testing.T) {
	docs := blockTestDocs(t)
	accepted := 0
	for _, d := range docs {
		got, ok := blockToJSON(d)
		if !ok {
			continue
		}
		accepted++
		want, err := yaml.YAMLToJSON(d)
		if err != nil {
			t.Errorf("accepted what sigs.k8s.io/yaml refuses (%v):\n%s", err, d)
			continue
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Errorf("wrote invalid JSON (%v): %s\nfrom:\n%s", err, got, d)
			continue
		}
		json.Unmarshal(want, &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("reads differently (-sigs.k8s.io/yaml +blockToJSON):\n%s\nfrom:\n%s", diff, d)
		}
	}
	if accepted < len(docs)*9/10 {
		t.Errorf("accepted %d of %d documents, want nine in ten", accepted, len(docs))
	}
}

// blockTestDocs are the YAML documents of the test data and of a small
// corpus in the owned and bare shapes, and some that blockToJSON must
// refuse or read with care.
func blockTestDocs(t *testing.T) [][]byte {
	var docs [][]byte
	files, _ := filepath.Glob("testdata/*/*.yaml")
	dir := t.TempDir()
	for _, s := range []corpus.Spec{{Nodes: 20, Pods: 300, YAML: true}, {Nodes: 20, Pods: 300, YAML: true, Stream: true, Bare: true}} {
		more, err := corpus.Write(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := (&file{name: name, data: data}).docs()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			docs = append(docs, d.yamlData())
		}
	}
	docs = append(docs, [][]byte{
		[]byte("a: yes\n"), []byte("a: 1.5\n"), []byte("a: 0x10\n"), []byte("a: 2026-11-01\n"),
		[]byte("a: 1:20\n"), []byte("a: |\n  x\n"), []byte("a: &x 1\nb: *x\n"), []byte("a: 'it''s'\n"),
		[]byte("a:\n- --from\n- 10.1.0.1\n- 8Gi\n- 10.0.0.0/24\n- \"x\\ty\"\n- null\n- ~\n- -1\n- 007\n"),
		[]byte("a: plain\n  continued\n"), []byte("a: [x, y]\nb: {}\nc: []\n"), []byte("on: 1\n"), []byte("a: .inf\n"),
		[]byte("l:\n  - name: a\n    v: 1\n  -   name: b\n      w:\n      - 2\n"), []byte("a: é\nb: \"\\u00e9\"\n"), []byte("a: x # c\n# c\nb:\n"),
	}...)
	return docs
}

// blockLine must find every path, and every path that goes on past what
// a document holds, on the line lineIn finds it on with yaml.v3.
func TestBlockLine(t *testing.T) {
	docs := blockTestDocs(t)
	docs = append(docs, []byte("# a comment\n\nkind: Pod\nmetadata:\n  name: p\nspec:\n\n  containers:\n  # the first\n  -   name: a\n      args:\n      - x\n  - name: b\nk:\n"))
	found := 0
	for _, d := range docs {
		root := new(goyaml.Node)
		if err := goyaml.Unmarshal(d, root); err != nil || len(root.Content) == 0 {
			continue
		}
		paths := [][]string{nil, {"absent"}}
		var walk func(n *goyaml.Node, at []string)
		walk = func(n *goyaml.Node, at []string) {
			paths = append(paths, at, append(slices.Clone(at), "absent"), append(slices.Clone(at), "[7]"))
			switch n.Kind {
			case goyaml.MappingNode:
				for i := 0; i+1 < len(n.Content); i += 2 {
					walk(n.Content[i+1], append(slices.Clone(at), n.Content[i].Value))
				}
			case goyaml.SequenceNode:
				for i, e := range n.Content {
					walk(e, append(slices.Clone(at), fmt.Sprintf("[%d]", i)))
				}
			}
		}
		walk(root.Content[0], nil)
		// Each path is a conversion of the whole document: a sample of
		// a large one's paths is enough.
		stride := max(1, len(paths)/50)
		for i := 0; i < len(paths); i += stride {
			p := paths[i]
			got, ok := blockLine(d, p, false)
			if !ok {
				break // the document is not one blockToJSON reads
			}
			found++
			if want := nodeLine(root, p); got != want {
				t.Errorf("%q: line %d, yaml.v3 %d, in:\n%s", p, got, want, d)
			}
			// Read whole, it may stop early: at the same line.
			if early, ok := blockLine(d, p, true); !ok || early != got {
				t.Errorf("%q: stopping early, line %d (%v), reading on %d, in:\n%s", p, early, ok, got, d)
			}
		}
	}
	if found < 10000 {
		t.Errorf("followed %d paths, want the corpus's thousands", found)
	}
}

// Whatever blockToJSON accepts, it reads as sigs.k8s.io/yaml does
// (`go test ./internal/audit -fuzz FuzzBlockToJSON` to search further).
func FuzzBlockToJSON(f *testing.F) {
	for _, seed := range []string{
		"a: yes\n", "a: 1.5\n", "a:\n- x\n- 'y'\n", "a: \"x\\ty\"\nb: ~\n", "l:\n  - name: a\n    v: 1\n",
		"metadata:\n  name: p\n  labels:\n    app: x\nspec:\n  containers:\n  - name: c\n    image: i:1\n",
		"a: -1\nb: 007\nc: 8Gi\n", "a: x # c\n# c\nb:\n", "k: 'it''s'\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		got, ok := blockToJSON(d)
		if !ok {
			return
		}
		want, err := yaml.YAMLToJSON(d)
		if err != nil {
			t.Fatalf("accepted what sigs.k8s.io/yaml refuses (%v):\n%q", err, d)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("wrote invalid JSON (%v): %s\nfrom:\n%q", err, got, d)
		}
		json.Unmarshal(want, &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Fatalf("reads differently (-sigs.k8s.io/yaml +blockToJSON):\n%s\nfrom:\n%q", diff, d)
		}
	})
}

// printableASCII checks eight bytes at a time; it must answer as a check
// of each byte does, on lines of printable ASCII with any byte dropped in.
func TestPrintableASCIIWords(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for range 200000 {
		b := make([]byte, r.Intn(40))
		for i := range b {
			b[i] = byte(0x20 + r.Intn(0x5f))
		}
		if len(b) > 0 && r.Intn(2) == 0 {
			b[r.Intn(len(b))] = byte(r.Intn(256))
		}
		if got, want := printableASCII(b), printableBytes(b); got != want {
			t.Fatalf("%q: %v, byte by byte %v", b, got, want)
		}
	}
}
