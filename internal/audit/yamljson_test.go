package audit

import (
	"bytes"
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
		if k := duplicateKey(got); k != "" {
			t.Errorf("wrote the key %q twice in an object: %s\nfrom:\n%s", k, got, d)
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
	for _, s := range []corpus.Spec{
		{Nodes: 20, Pods: 300, YAML: true},
		{Nodes: 20, Pods: 300, YAML: true, Stream: true, Bare: true},
		{Nodes: 20, Pods: 300, YAML: true, Stream: true, Bare: true, Minimal: true, Flow: true},
	} {
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
	for _, d := range append(flowDocs, flowRefused...) {
		docs = append(docs, []byte(d))
	}
	return docs
}

// flowDocs are flow collections as people write them, which blockToJSON
// must read (TestFlowToJSON), and read as sigs.k8s.io/yaml does
// (TestBlockToJSON).
var flowDocs = []string{
	"{a: 1}\n", "[a, b]\n", "{a: b} # c\n", "# c\n\n{\n  a: 1,\n  b: [x, z],\n}\n", "{\na: 1\n}\n",
	"a: [x, z,]\n", "a: [x, z, ]\n", "a: {x: 1,}\n", "a: {\"x\":1}\n", "a: {'x':v}\n", "a: {x : 1}\n", "a: {x: }\n",
	"a: {x:\n 1}\n", "a: {x:\n\n  # c\n  1}\n", "a: [\nx]\n", "a: [\n  x\n]\n", "a:\n  b: [\n  x]\nc: 1\n", "a:\n  b: [x,\nz]\n  c: 1\n", "a:\n  b: [\nx]\n",
	"a: [x\n, z]\n", "a: [x # c\n , z]\n", "a: [x #c\n]\n", "a: [x#c]\n", "a: [a b]\n", "a: [a  b ]\n", "a: [\"x\" , z]\n",
	"a: [x] # c\n", "a: {b: [x], c: d} \n", "a:\n  {b: c}\n", "a:\n- {b: c}\n-   [x]\n- d\n",
	"a: {b: 'it''s', c: \"x y\", d: ''}\n", "a: [x, {b: c}, [d, [e, {}]], {}, []]\n", "a: {b:c: d}\n", "a: {b: c:d}\n",
	"a: {1b: c, b1: 2}\n", "a: [x,\n# c\n  z]\n", "a: [x,\n  # c\n  z]\n", "a: [http://x/z, 'a?b']\n",
	"a: [-1, --x, -x, 0, 10, true, null, ~, 8Gi, 500m, 10.0.0.1, '1.5', \"yes\"]\n",
	"a: [{}, [], {b: {}}]\nb: c\n", "kind: Pod\nmetadata: {name: p,\n  labels: {app: x}}\nspec:\n  containers:\n  - {name: c,\n     image: i}\n",
	"a: {b: [x,\n  z], c: {\n  d: e}}\nf: [\n]\n", "a: {b: 1, c: {b: 2}}\nb: {a: 1}\nc:\n- {b: 1}\n- {b: 2}\n", "a: [\"x\"]\nb: 'y'\n",
}

// flowRefused are flow documents blockToJSON leaves to sigs.k8s.io/yaml:
// plain scalars over lines, pairs in sequences, keys without values,
// indicators it does not read, and broken ones.
var flowRefused = []string{
	"a: [x\n y]\n", "a: [x\n\n y]\n", "a: ['x\n y']\n", "a: [\"x\n y\"]\n", "a: [x: y]\n", "a: [\"x\": y]\n", "a: {x}\n",
	"a: {x, y: 1}\n", "a: {x:1}\n", "a: {? x: y}\n", "a: [x?y]\n", "a: [x:]\n", "a: [x:,y]\n", "a: [&x 1, *x]\n", "a: [!!str 1]\n",
	"a: [\"x\\ty\"]\n", "a: [,]\n", "a: {,}\n", "a: [x,,y]\n", "a: [- x]\n", "a: [x]y\n", "a: [x] y\n", "a: {b: c}: d\n",
	"- [a]\n- {b: c}\n", "a: [http://x/y?z]\n", "a: [1.5]\n", "a: {b: yes}\n", "a: [0x10, 2026-11-01]\n", "a: [.inf]\n",
	"a: 1\na: 2\n", "a: {b: 1, b: 2}\n", "{a: 1, a: 2}\n", "a:\n  b: 1\n  c: {b: 2}\n  b: 3\n",
	"a: [\n---\n]\n", "a: [\n...\n]\n", "a: [x]]\n", "a: {x: ]}\n", "a: [\"x\"y]\n", "a: {b: c d: e}\n", "a: [x,#c\n]\n",
	"a: [x\n: y]\n", "{a: 1}\nb: 2\n", "a: [x]\n  b\n", "[a]: b\n", "a: {x: y}z\n", "a: [{x: 1}: 2]\n", "a: [\n", "a: {b: [c}\n",
}

// The flow collections people write are read by blockToJSON, not left to
// the generic parser.
func TestFlowToJSON(t *testing.T) {
	for _, d := range flowDocs {
		if _, ok := blockToJSON([]byte(d)); !ok {
			t.Errorf("blockToJSON gives up on %q", d)
		}
	}
	for _, d := range flowRefused {
		if js, ok := blockToJSON([]byte(d)); ok {
			t.Errorf("blockToJSON reads %q (as %s), which it cannot read as sigs.k8s.io/yaml does", d, js)
		}
	}
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
		// Each path is a conversion of the whole document: a sample of
		// a large one's paths is enough.
		found += checkLines(t, d, root, 50)
	}
	if found < 10000 {
		t.Errorf("followed %d paths, want the corpus's thousands", found)
	}
}

// checkLines checks that blockLine finds up to about most paths of d (each
// path in it, and each going on past what it holds) on the line yaml.v3
// puts them, reading on and stopping early, and returns how many it
// followed: none where blockToJSON does not read d.
func checkLines(t *testing.T, d []byte, root *goyaml.Node, most int) int {
	t.Helper()
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
	found := 0
	for i := 0; i < len(paths); i += len(paths)/most + 1 {
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
	return found
}

// Whatever blockToJSON accepts, block or flow style, it reads as
// sigs.k8s.io/yaml does, and blockLine finds each path on yaml.v3's line
// (`go test ./internal/audit -fuzz FuzzBlockToJSON` to search further).
func FuzzBlockToJSON(f *testing.F) {
	for _, seed := range []string{
		"a: yes\n", "a: 1.5\n", "a:\n- x\n- 'y'\n", "a: \"x\\ty\"\nb: ~\n", "l:\n  - name: a\n    v: 1\n",
		"metadata:\n  name: p\n  labels:\n    app: x\nspec:\n  containers:\n  - name: c\n    image: i:1\n",
		"a: -1\nb: 007\nc: 8Gi\n", "a: x # c\n# c\nb:\n", "k: 'it''s'\n",
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range flowDocs {
		f.Add([]byte(seed))
	}
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: x}}\nspec:\n  containers:\n  - {name: c, image: 'r/i:1', args: [--x, /m], resources: {limits: {nvidia.com/gpu: 1}}}\n"))
	f.Add([]byte("{\n  # by hand\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n  \"spec\": {\"containers\": [{\"name\": \"c\"}]},\n}\n"))
	f.Fuzz(func(t *testing.T, d []byte) {
		got, ok := blockToJSON(d)
		if !ok {
			return
		}
		// Lines come from the same reading; where it used to give up
		// they came from yaml.v3, which must agree.
		root := new(goyaml.Node)
		if err := goyaml.Unmarshal(d, root); err != nil || len(root.Content) == 0 {
			t.Fatalf("accepted what yaml.v3 refuses (%v):\n%q", err, d)
		}
		checkLines(t, d, root, 200)
		want, err := yaml.YAMLToJSON(d)
		if err != nil {
			t.Fatalf("accepted what sigs.k8s.io/yaml refuses (%v):\n%q", err, d)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("wrote invalid JSON (%v): %s\nfrom:\n%q", err, got, d)
		}
		if k := duplicateKey(got); k != "" {
			t.Fatalf("wrote the key %q twice in an object: %s\nfrom:\n%q", k, got, d)
		}
		json.Unmarshal(want, &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Fatalf("reads differently (-sigs.k8s.io/yaml +blockToJSON):\n%s\nfrom:\n%q", diff, d)
		}
	})
}

// duplicateKey is a key some object of the JSON js has twice, or "". A
// decoder into API types would merge the two values, where
// sigs.k8s.io/yaml keeps the last.
func duplicateKey(js []byte) string {
	dec := json.NewDecoder(bytes.NewReader(js))
	var value func() string
	value = func() string {
		switch tok, _ := dec.Token(); tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				key, _ := k.(string)
				if seen[key] {
					return key
				}
				seen[key] = true
				if dup := value(); dup != "" {
					return dup
				}
			}
			dec.Token()
		case json.Delim('['):
			for dec.More() {
				if dup := value(); dup != "" {
					return dup
				}
			}
			dec.Token()
		}
		return ""
	}
	return value()
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
