package trace

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Rows appended in two runs, the second resuming the first's file, read
// back as one trace: each row once, its submit the time it was given.
func TestAppendResumes(t *testing.T) {
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	rows := []Job{
		{Submit: 10 * time.Minute, Team: "ml", Kind: Training, Name: "bert", Pods: 2, GPUs: 1, CPU: resource.MustParse("4"), Memory: resource.MustParse("16Gi"), Duration: 45 * time.Minute, Class: "training"},
		{Submit: 20 * time.Minute, Team: "ml", Kind: Batch, Name: "etl", Pods: 1, Duration: 90 * time.Second},
		{Submit: time.Hour, Team: "web", Kind: Inference, Name: "reco", Pods: 3, GPUs: 1},
	}
	var file bytes.Buffer
	a, err := NewAppender(&file, true, start, "recorded by a test")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range rows[:2] {
		if err := a.Append(j, start.Add(j.Submit)); err != nil {
			t.Fatal(err)
		}
	}

	names, header, err := RowNames("day.csv", bytes.NewReader(file.Bytes()))
	if err != nil || !header {
		t.Fatalf("RowNames of the first run's file: header %v, %v", header, err)
	}
	if want := map[string]bool{"ml/bert": true, "ml/etl": true}; !cmp.Equal(names, want) {
		t.Errorf("RowNames = %v, want %v", names, want)
	}
	b, err := NewAppender(&file, false, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range rows {
		if names[j.Team+"/"+j.Name] {
			continue
		}
		if err := b.Append(j, start.Add(j.Submit)); err != nil {
			t.Fatal(err)
		}
	}

	got, err := Parse("day.csv", file.Bytes())
	if err != nil {
		t.Fatalf("reading the resumed file:\n%s\n%v", file.String(), err)
	}
	want := &Trace{Start: start, Jobs: rows}
	if diff := cmp.Diff(want, got, ignoreLines); diff != "" {
		t.Errorf("the resumed file (-want +got):\n%s\n%s", diff, file.String())
	}
	if !strings.HasPrefix(file.String(), "# recorded by a test\n# start: 2026-03-02T09:00:00Z\n"+Header+"\n") {
		t.Errorf("the file does not begin with its comment, start and header:\n%s", file.String())
	}
}

// An empty file has no header yet; a file of another kind is refused.
func TestRowNamesOfOtherFiles(t *testing.T) {
	names, header, err := RowNames("new.csv", strings.NewReader(""))
	if err != nil || header || len(names) != 0 {
		t.Errorf("RowNames of an empty file = %v, %v, %v; want none, no header, no error", names, header, err)
	}
	if _, _, err := RowNames("x.csv", strings.NewReader("a,b\n1,2\n")); err == nil || !strings.Contains(err.Error(), "x.csv:1") {
		t.Errorf("RowNames of another CSV = %v; want a problem at x.csv:1", err)
	}
}
