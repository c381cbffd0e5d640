package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"berth.io/berth/internal/audit/corpus"
)

// The target: a cluster of 5,000 nodes and 150,000 pods, dumped to files
// in every shape audit reads (JSON or YAML; Lists, as `kubectl get -A`
// writes them, or streams of single objects, as rendered charts are;
// pods owned by audited controllers, or bare), audited in 2 s or less on
// 2 cores. The corpus is generated once per shape, outside the timing.
func BenchmarkAuditFiles(b *testing.B) {
	for _, sh := range corpus.Shapes {
		for _, size := range []struct{ nodes, pods int }{{500, 15000}, {5000, 150000}} {
			s := sh.Spec
			s.Nodes, s.Pods = size.nodes, size.pods
			b.Run(fmt.Sprintf("%s/nodes=%d/pods=%d", sh.Name, s.Nodes, s.Pods), func(b *testing.B) { benchAuditFiles(b, s) })
		}
	}
}

func benchAuditFiles(b *testing.B, s corpus.Spec) {
	dir := b.TempDir()
	files, err := corpus.Write(dir, s)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, f := range files {
		st, _ := os.Stat(f)
		size += st.Size()
	}
	b.SetBytes(size)
	var r *Report
	for b.Loop() {
		inv, err := LoadFiles([]string{dir}, nil)
		if err != nil {
			b.Fatal(err)
		}
		r = Check(inv, Options{Source: filepath.Base(dir)})
	}
	if got := r.Objects["Pod"]; got != s.Pods {
		b.Fatalf("audited %d pods, want %d", got, s.Pods)
	}
	if got := r.Objects["Node"]; got != s.Nodes {
		b.Fatalf("audited %d nodes, want %d", got, s.Nodes)
	}
	b.ReportMetric(float64(len(r.Findings)), "findings")
}
