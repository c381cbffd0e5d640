package trace

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A trace written in the YAML form and read back is the same trace: its
// start, each job's every field, its interruptions and drains.
func TestWriteYAMLRoundTrip(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name  string
		trace *Trace
	}{
		{"retail", &Trace{Start: retailStart, Jobs: retailJobs("")}},
		{"interruptions and drains", &Trace{Start: retailStart, Jobs: []Job{
			{Submit: 90*time.Minute + 1500*time.Millisecond, Team: "t", Kind: Training, Name: "a", Pods: 3, GPUs: 8, CPU: q("1500m"), Memory: q("1.5Gi"), Duration: 25 * time.Hour, Checkpoint: time.Minute + 30*time.Second, Class: "training"},
			{Submit: 2 * time.Hour, Team: "t", Kind: Inference, Name: "b", Pods: 1, Model: "reco:4"},
			{Submit: 3 * time.Hour, Team: "t", Kind: Inference, Name: "c", Pods: 2, GPUs: 1, Duration: time.Hour},
		}, Interruptions: []Interruption{{At: 40 * time.Minute, Pool: "spot-gpu"}, {At: 3 * time.Hour, Pool: "spot-gpu"}},
			Drains: []Drain{{At: time.Hour, Pool: "cpu"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteYAML(&buf, tc.trace, "berth record"); err != nil {
				t.Fatal(err)
			}
			got, err := Parse("w.yaml", buf.Bytes())
			if err != nil {
				t.Fatalf("Parse(WriteYAML):\n%s\n%v", buf.String(), err)
			}
			if diff := cmp.Diff(tc.trace, got, ignoreLines, cmpopts.IgnoreFields(Interruption{}, "Line"), cmpopts.IgnoreFields(Drain{}, "Line")); diff != "" {
				t.Errorf("Parse(WriteYAML(t)) (-t +got):\n%s\nwritten:\n%s", diff, buf.String())
			}
		})
	}
}
