package scheduler

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"berth.io/berth/internal/upstream/patched"
)

var update = flag.Bool("update", false, "rewrite the patched copy from the module cache")

// upstreamModule and upstreamPackage are where the copy comes from: the
// version berth builds against (go.mod).
const (
	upstreamModule  = "sigs.k8s.io/kueue"
	upstreamPackage = "pkg/scheduler"
)

// patch is all that berth changes in Kueue's scheduler: the two
// orderings of a cycle's heads end their ties by the Workload's namespace
// and name (byKey, in ties.go), where upstream leaves them to the order
// it ranged over a map of ClusterQueues in. Three events whose message is
// no format are recorded with Event rather than Eventf, for go vet.
var patch = []patched.Edit{
	patched.Replace("scheduler.go", "\t\tif bComparisonTimestamp.Before(aComparisonTimestamp) {\n\t\t\treturn 1\n\t\t}\n\t\treturn 0\n",
		"\t\tif bComparisonTimestamp.Before(aComparisonTimestamp) {\n\t\t\treturn 1\n\t\t}\n\t\treturn byKey(a.Obj, b.Obj) // berth\n", 1),
	patched.Replace("fair_sharing_iterator.go", "\treturn aComparisonTimestamp.Before(bComparisonTimestamp)\n}\n",
		"\tif !aComparisonTimestamp.Equal(bComparisonTimestamp) {\n\t\treturn aComparisonTimestamp.Before(bComparisonTimestamp)\n\t}\n\treturn byKey(a.Obj, b.Obj) < 0 // berth\n}\n", 1),
	// go vet: a message that is not a format goes through Event, not
	// Eventf (the same event, but a % in it stays as written).
	patched.Replace("scheduler.go", "Eventf(e.Obj, corev1.EventTypeWarning, \"SecondPassFailed\", api.TruncateEventMessage(", "Event(e.Obj, corev1.EventTypeWarning, \"SecondPassFailed\", api.TruncateEventMessage(", 1),
	patched.Replace("scheduler.go", "Eventf(e.Obj, corev1.EventTypeWarning, \"Pending\", api.TruncateEventMessage(", "Event(e.Obj, corev1.EventTypeWarning, \"Pending\", api.TruncateEventMessage(", 1),
	patched.Replace("scheduler.go", "s.recorder.Eventf(oldSlice, corev1.EventTypeNormal, reason, message)", "s.recorder.Event(oldSlice, corev1.EventTypeNormal, reason, message)", 1),
}

// files are the package's non-test files, copied.
var files = []string{"fair_sharing_iterator.go", "logging.go", "scheduler.go"}

// TestCopyIsUpstreamWithThePatch rebuilds the copy from the module berth
// builds against, with the patch, and compares it with the files here:
// a change upstream (a version bump), or to the copy by hand, fails it.
// -update writes the copy.
func TestCopyIsUpstreamWithThePatch(t *testing.T) {
	patched.Copy{Module: upstreamModule, Package: upstreamPackage, Files: files, Patch: patch, Dir: "internal/upstream/kueue/scheduler"}.Check(t, *update)
}

// TestTheCopyIsUpstreamsWholePackage fails when upstream adds a file the
// copy does not have.
func TestTheCopyIsUpstreamsWholePackage(t *testing.T) {
	dir, version := patched.ModuleDir(t, upstreamModule)
	entries, err := os.ReadDir(filepath.Join(dir, upstreamPackage))
	if err != nil {
		t.Fatal(err)
	}
	var upstream []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			upstream = append(upstream, e.Name())
		}
	}
	if fmt.Sprint(upstream) != fmt.Sprint(files) {
		t.Errorf("%s %s/%s has %v; the copy takes %v", upstreamModule, version, upstreamPackage, upstream, files)
	}
}
