package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed `berth up -d` names its control plane's log; the failure
// message carries the log's end, which the test's temporary directory
// would otherwise take with it.
func TestControlPlaneLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "berth.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 9000)+"panic: the cause\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := "error: the background berth exited before the cluster was ready\n(the control plane's log: " + path + ")\n"
	got := controlPlaneLog(out)
	if !strings.Contains(got, "panic: the cause") || !strings.Contains(got, "--- the end of "+path) || len(got) > 8200 {
		t.Errorf("controlPlaneLog gave %d bytes, ending %q; want the last 8000 bytes of the log, under a heading naming it", len(got), got[max(0, len(got)-40):])
	}
	if got := controlPlaneLog("berth plan exited 1: no changes"); got != "" {
		t.Errorf("output naming no log gave %q; want nothing", got)
	}
}
