package rehearse

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// PruneStale removes the directories of rehearsals that are gone and
// keeps those of rehearsals still running.
func TestPruneStale(t *testing.T) {
	parent := t.TempDir()
	live, release, err := TempDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	gone, releaseGone, err := TempDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	// As a SIGKILL leaves it: the flock goes with the process, the
	// directory stays.
	if err := os.Rename(gone, gone+"-copy"); err != nil {
		t.Fatal(err)
	}
	releaseGone()
	if err := os.Rename(gone+"-copy", gone); err != nil {
		t.Fatal(err)
	}
	// An older berth's: no owner file; a state lock nobody holds.
	old := filepath.Join(parent, tempPrefix+"old")
	young := filepath.Join(parent, tempPrefix+"young")
	for _, d := range []string{old, young} {
		if err := os.MkdirAll(filepath.Join(d, "cluster"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "lock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	// Not a rehearsal's.
	other := filepath.Join(parent, "berth-e2e-1")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}

	removed, err := PruneStale(parent)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{gone, old}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	for _, d := range []string{live, young, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	release()
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("release left %s: %v", live, err)
	}
}
