package trace

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/internal/metricsapi"
)

// A trace written and read back is the same trace: its start, and each
// job's every field.
func TestWriteRoundTrip(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name  string
		trace *Trace
	}{
		{"retail", &Trace{Start: retailStart, Jobs: retailJobs("")}},
		{"no start, odd values", &Trace{Jobs: []Job{
			{Submit: 90*time.Minute + 1500*time.Millisecond, Team: "t", Kind: Training, Name: "a", Pods: 3, GPUs: 8, CPU: q("1500m"), Memory: q("1.5Gi"), Duration: 25 * time.Hour, Checkpoint: time.Minute + 30*time.Second},
			{Submit: 48 * time.Hour, Team: "t", Kind: Inference, Name: "b", Pods: 1, Model: "reco:4"},
		}}},
		{"a start in another zone", &Trace{Start: time.Date(2020, 7, 1, 9, 0, 0, 0, time.FixedZone("UTC+8", 8*3600)), Jobs: []Job{{Team: "t", Kind: Batch, Name: "c", Pods: 1, Duration: time.Second}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.trace); err != nil {
				t.Fatal(err)
			}
			got, err := Parse("w.csv", buf.Bytes())
			if err != nil {
				t.Fatalf("Parse(Write):\n%s\n%v", buf.String(), err)
			}
			if diff := cmp.Diff(tc.trace, got, ignoreLines); diff != "" {
				t.Errorf("Parse(Write(t)) (-t +got):\n%s\nwritten:\n%s", diff, buf.String())
			}
		})
	}
}

// The CSV form holds jobs only: a trace with a load is refused, not
// written in part.
func TestWriteRefusesALoad(t *testing.T) {
	tr := &Trace{Jobs: retailJobs(""), Load: &metricsapi.Profile{}}
	err := Write(&bytes.Buffer{}, tr)
	if err == nil || !strings.Contains(err.Error(), "YAML") {
		t.Errorf("Write of a trace with a load = %v, want a problem pointing to the YAML form", err)
	}
	tr = &Trace{Jobs: retailJobs(""), Interruptions: []Interruption{{At: time.Hour, Pool: "spot-gpu"}}}
	if err := Write(&bytes.Buffer{}, tr); err == nil || !strings.Contains(err.Error(), "YAML") {
		t.Errorf("Write of a trace with interruptions = %v, want a problem pointing to the YAML form", err)
	}
}
