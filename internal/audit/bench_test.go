package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"berth.io/berth/internal/audit/corpus"
)

// The target: a cluster of 5,000 nodes and 150,000 pods, dumped to files
// as `kubectl get -A -o json` (or -o yaml) writes them, audited in 2 s or
// less on 2 cores. The corpus is generated once per size, outside the
// timing.
func BenchmarkAuditFiles(b *testing.B) {
	for _, s := range []corpus.Spec{
		{Nodes: 500, Pods: 15000},
		{Nodes: 5000, Pods: 150000},
		{Nodes: 500, Pods: 15000, YAML: true},
		{Nodes: 5000, Pods: 150000, YAML: true},
	} {
		format := "json"
		if s.YAML {
			format = "yaml"
		}
		b.Run(fmt.Sprintf("%s/nodes=%d/pods=%d", format, s.Nodes, s.Pods), func(b *testing.B) {
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
		})
	}
}
