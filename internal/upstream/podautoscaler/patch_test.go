package podautoscaler

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"berth.io/berth/internal/upstream/patched"
)

var update = flag.Bool("update", false, "rewrite the patched copy from the module cache")

// upstreamModule and upstreamPackage are where the copy comes from: the
// version berth builds against (go.mod).
const (
	upstreamModule  = "k8s.io/kubernetes"
	upstreamPackage = "pkg/controller/podautoscaler"
)

// patch is all that berth changes in the HPA controller: every reading
// of the time that decides a scaling (stabilization windows, scaling
// policies' periods and the scale events they count, the CPU
// initialization period, lastScaleTime and conditions) goes through
// clockNow, the controller's clock, and its queue, whose delays are the
// sync period, is berth's on the same clock (queue.go says why). The
// timings of its own metrics (start := time.Now() ... time.Since(start))
// stay wall time: they measure the machine, not the trace.
var patch = []patched.Edit{
	patched.Replace("horizontal.go", "\t\"k8s.io/kubernetes/pkg/features\"\n", "\t\"k8s.io/kubernetes/pkg/features\"\n\t\"k8s.io/utils/clock\"\n", 1),
	patched.Replace("horizontal.go", "\tdelayOfInitialReadinessStatus time.Duration,\n) *HorizontalController {\n",
		"\tdelayOfInitialReadinessStatus time.Duration,\n\tclk clock.WithTickerAndDelayedExecution,\n) *HorizontalController {\n\tclockNow = clk.Now\n", 1),
	patched.Replace("horizontal.go", "\t\tqueue: workqueue.NewTypedRateLimitingQueueWithConfig(\n\t\t\tNewDefaultHPARateLimiter(resyncPeriod),\n\t\t\tworkqueue.TypedRateLimitingQueueConfig[string]{\n\t\t\t\tName: \"horizontalpodautoscaler\",\n\t\t\t},\n\t\t),\n",
		"\t\tqueue: newQueue(\n\t\t\tNewDefaultHPARateLimiter(resyncPeriod),\n\t\t\tclk,\n\t\t),\n", 1),
	patched.Replace("horizontal.go", "\tstart := time.Now()\n", "\tstart := time.Now() // berth: wall time, for the controller's own metrics\n", 2),
	patched.Replace("horizontal.go", "time.Now()}", "clockNow()}", 5),
	patched.Replace("horizontal.go", "cutoff := time.Now().Add(", "cutoff := clockNow().Add(", 3),
	patched.Replace("horizontal.go", "\tnow := time.Now()\n", "\tnow := clockNow()\n", 1),
	patched.Replace("horizontal.go", "metav1.NewTime(time.Now())", "metav1.NewTime(clockNow())", 1),
	patched.Replace("horizontal.go", "{replicaChange, time.Now(), false}", "{replicaChange, clockNow(), false}", 2),
	patched.Replace("replica_calculator.go", ".After(time.Now())", ".After(clockNow())", 1),
}

// files are the package's non-test files, copied.
var files = []string{"doc.go", "horizontal.go", "rate_limiters.go", "replica_calculator.go"}

// TestCopyIsUpstreamWithThePatch rebuilds the copy from the module berth
// builds against, with the patch, and compares it with the files here:
// a change upstream (a version bump), or to the copy by hand, fails it.
// -update writes the copy.
func TestCopyIsUpstreamWithThePatch(t *testing.T) {
	patched.Copy{Module: upstreamModule, Package: upstreamPackage, Files: files, Patch: patch, Dir: "internal/upstream/podautoscaler", Verify: everyNowLeftIsAMetric}.Check(t, *update)
}

// everyNowLeftIsAMetric fails a patched horizontal.go whose readings of
// the time left are more than the two for the controller's own metrics:
// a decision would still read the wall clock.
func everyNowLeftIsAMetric(name, out string) error {
	if name == "horizontal.go" && strings.Count(out, "time.Now()") != 2 {
		return fmt.Errorf("%d readings of time.Now are left, where only the two for the controller's own metrics may be: a decision still reads the wall clock", strings.Count(out, "time.Now()"))
	}
	return nil
}
