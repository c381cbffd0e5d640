package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"berth.io/berth/internal/rehearse/trace"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"7d":                   now.AddDate(0, 0, -7),
		"36h":                  now.Add(-36 * time.Hour),
		"2026-03-01T00:00:00Z": time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1h", "0d", "week"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) gave no error", bad)
		}
	}
}

// A file killed mid-row is resumed from its last whole row: the cut row
// is dropped, the rows before it are kept, and the header is not
// written again.
func TestResumeTraceDropsACutRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "day.csv")
	whole := trace.Header + "\n2026-03-02T09:00:00Z,ml,batch,etl,1,0,,,90s,,,\n"
	if err := os.WriteFile(path, []byte(whole+"2026-03-02T09:05:00Z,ml,trai"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, names, header, err := resumeTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !header || len(names) != 1 || !names["ml/etl"] {
		t.Errorf("resumeTrace: header %v, names %v; want the header and ml/etl", header, names)
	}
	if data, _ := os.ReadFile(path); string(data) != whole {
		t.Errorf("the file after resuming:\n%s\nwant:\n%s", data, whole)
	}
}
