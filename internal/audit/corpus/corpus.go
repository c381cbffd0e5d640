// Package corpus writes a synthetic cluster dump, as `kubectl get -A -o
// json` (or -o yaml) would write it, for audit's benchmarks: pools of
// nodes as berth's design lays them out, team namespaces with quotas,
// LimitRanges and PDBs, inference Deployments and training Jobs, and
// their running pods with full specs and statuses. A few workloads break
// rules on purpose, so that the audit also has findings to report.
package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"sigs.k8s.io/yaml"
)

// Spec sizes a corpus.
type Spec struct {
	Nodes int
	Pods  int
	// PodsPerWorkload is each Deployment's replicas and each Job's
	// parallelism. Zero means 100.
	PodsPerWorkload int
	// YAML writes YAML instead of JSON.
	YAML bool
	// Stream writes each object as a document of its own (YAML
	// documents separated by ---, or JSON objects one after another, as
	// rendered charts and `kubectl get -o yaml` of single objects are)
	// instead of a List per file.
	Stream bool
	// Bare makes the pods bare: no owner references, and no Deployments,
	// ReplicaSets or Jobs written, so every pod is audited as a workload
	// of its own.
	Bare bool
	// Minimal writes each pod as a person writes a manifest: its name,
	// namespace, labels and containers, and nothing the API server or
	// kubelet would add (no status, node, tolerations or token volume).
	Minimal bool
	// Flow writes the pods of a YAML stream in flow style, as people
	// write manifests by hand ({key: value}, [a, b], inline at any
	// depth, alone or mixed with block style; see flowStyles). Nodes and
	// policy stay as kubectl writes them.
	Flow bool
}

// Shapes are the shapes of dump audit reads, each a Spec with no size:
// JSON or YAML; Lists (as `kubectl get -A` writes them) or streams of
// single objects (as rendered charts are); pods owned by the workloads
// in the dump, or bare; and the bare pods of a YAML stream also as
// minimal manifests, the shape of a rendered chart, and as minimal
// manifests in flow style, the shape of manifests written by hand.
var Shapes = []struct {
	Name string
	Spec Spec
}{
	{"json-list-owned", Spec{}},
	{"json-list-bare", Spec{Bare: true}},
	{"json-stream-owned", Spec{Stream: true}},
	{"json-stream-bare", Spec{Stream: true, Bare: true}},
	{"yaml-list-owned", Spec{YAML: true}},
	{"yaml-list-bare", Spec{YAML: true, Bare: true}},
	{"yaml-stream-owned", Spec{YAML: true, Stream: true}},
	{"yaml-stream-bare", Spec{YAML: true, Stream: true, Bare: true}},
	{"yaml-stream-bare-minimal", Spec{YAML: true, Stream: true, Bare: true, Minimal: true}},
	{"yaml-stream-bare-flow", Spec{YAML: true, Stream: true, Bare: true, Minimal: true, Flow: true}},
}

// podsPerFile keeps files the size a dump split per namespace would have.
const podsPerFile = 10000

// Write writes the corpus into dir and returns the files written.
func Write(dir string, s Spec) ([]string, error) {
	if s.PodsPerWorkload == 0 {
		s.PodsPerWorkload = 100
	}
	g := newGenerator(s)
	var files []string
	write := func(name string, objs []any) error {
		path := filepath.Join(dir, name)
		if s.YAML {
			path += ".yaml"
		} else {
			path += ".json"
		}
		files = append(files, path)
		dump := s
		dump.Flow = false
		return writeObjects(path, objs, dump)
	}
	if err := write("nodes", g.nodes()); err != nil {
		return nil, err
	}
	if err := write("policy", g.policy()); err != nil {
		return nil, err
	}
	if !s.Bare {
		if err := write("workloads", g.workloads()); err != nil {
			return nil, err
		}
	}
	// Pods are most of the corpus: render their files on every core.
	var wg sync.WaitGroup
	errs := make([]error, (s.Pods+podsPerFile-1)/podsPerFile)
	for i := range errs {
		path := filepath.Join(dir, fmt.Sprintf("pods-%03d", i))
		if s.YAML {
			path += ".yaml"
		} else {
			path += ".json"
		}
		files = append(files, path)
		wg.Go(func() {
			errs[i] = writeObjects(path, g.pods(i*podsPerFile, min(s.Pods, (i+1)*podsPerFile)), s)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// writeObjects writes objs as a v1 List or a stream, in JSON or YAML.
func writeObjects(path string, objs []any, s Spec) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if s.Stream {
		return writeStream(f, objs, s.YAML, s.Flow)
	}
	if !s.YAML {
		enc := json.NewEncoder(f)
		enc.SetIndent("", "    ")
		if err := enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": objs}); err != nil {
			return err
		}
		return f.Close()
	}
	// As `kubectl get -o yaml` writes a List: items indented under "- ".
	w := bufio.NewWriter(f)
	w.WriteString("apiVersion: v1\nitems:\n")
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		for i, line := range bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if i == 0 {
				w.WriteString("- ")
			} else {
				w.WriteString("  ")
			}
			w.Write(line)
		}
		w.WriteString("\n")
	}
	w.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// writeStream writes objs one document each: YAML after "---" lines (in
// flow style, each in the next of flowStyles), or indented JSON objects
// one after another.
func writeStream(f *os.File, objs []any, asYAML, flow bool) error {
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	var doc bytes.Buffer
	for i, o := range objs {
		if !asYAML {
			if err := enc.Encode(o); err != nil {
				return err
			}
			continue
		}
		if flow {
			doc.Reset()
			if err := writeFlow(&doc, o, flowStyle(i)%flowStyles); err != nil {
				return err
			}
			w.WriteString("---\n")
			w.Write(doc.Bytes())
			continue
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		w.WriteString("---\n")
		w.Write(b)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
