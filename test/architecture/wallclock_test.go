package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The packages whose code runs in a rehearsal's process, on its clock:
// code there must take the clock it is given (a simtime.Virtual, a
// k8s.io/utils/clock interface) and never read or wait on the wall clock
// where what it decides could reach a figure. A wall-clock read slips
// past every unit test and shows only in the long tier's
// TestRehearseInvariance, minutes later; this test names it at once.
// internal/simtime is the clock itself, which measures its settling in
// wall time by design, and is not listed.
var rehearsalPackages = []string{
	"internal/autoscaler",
	"internal/budgets",
	"internal/cluster",
	"internal/cluster/stages",
	"internal/controller",
	"internal/crclock",
	"internal/karpenter",
	"internal/kubelets",
	"internal/kueue",
	"internal/metricsapi",
	"internal/pools",
	"internal/recorded",
	"internal/rehearse",
	"internal/simulate",
	"internal/slim",
	"internal/spot",
	"internal/storage",
	"internal/upstream/job",
	"internal/upstream/podautoscaler",
}

// wallClockAllowed are the wall-clock reads and waits in those packages
// that decide nothing a rehearsal reports, keyed "FILE FUNCTION CALL",
// each with why. A new entry needs as good a reason.
var wallClockAllowed = map[string]string{
	"internal/rehearse/run.go Run time.Now":                                             "the replay's wall time, reported as such (report.Wall)",
	"internal/rehearse/run.go Run time.Since":                                           "the replay's wall time, reported as such (report.Wall)",
	"internal/rehearse/run.go Run time.NewTicker":                                       "the progress line every 5 s of wall time, for the person waiting",
	"internal/rehearse/tempdir.go stale time.Since":                                     "a killed rehearsal's directory is judged by its file's age on disk",
	"internal/spot/spot.go Pick time.Now":                                               "seeds the choice of nodes when no seed is given: a rehearsal always gives one",
	"internal/pools/execute.go Execute time.Now":                                        "berth apply's progress lines (seconds taken); a rehearsal changes no pool while it replays",
	"internal/pools/execute.go Execute time.Since":                                      "berth apply's progress lines (seconds taken); a rehearsal changes no pool while it replays",
	"internal/pools/execute.go waitReady wait.PollUntilContextTimeout":                  "berth apply waiting for new nodes; a rehearsal changes no pool while it replays",
	"internal/pools/drain.go clock clock.RealClock":                                     "the drainer's clock when its caller gives none (berth apply); a rehearsal's drains give theirs",
	"internal/autoscaler/controller.go NewController clock.RealClock":                   "the autoscaler's clock when its caller gives none (berth up); a rehearsal gives its own",
	"internal/controller/manager.go NewManager clock.RealClock":                         "the manager's clock when its caller gives none (berth up); a rehearsal gives its own",
	"internal/controller/manager.go Complete clock.RealClock":                           "a controller that asks for the wall clock (OnWallClock), which none does today: one that did would need its reason here",
	"internal/karpenter/cloudprovider.go NewCloudProvider clock.RealClock":              "the cloud provider's clock when its caller gives none (berth up); a rehearsal gives its own",
	"internal/karpenter/operator.go Run clock.RealClock":                                "Karpenter's clock when its caller gives none (berth up); a rehearsal gives its own",
	"internal/kueue/run.go Run clock.RealClock":                                         "Kueue's clock when berth-kueue follows none (berth up); a rehearsal gives it the followed clock",
	"internal/kueue/run.go retryFor wait.PollUntilContextTimeout":                       "retries berth-kueue's set-up (its APIServices, webhooks) before it says ready, before the rehearsal's clock runs",
	"internal/metricsapi/server.go NewStartingServer time.Now":                          "the metrics server's clock until its Controller sets the manager's (a rehearsal's) at start",
	"internal/upstream/podautoscaler/clock.go  time.Now":                                "the HPA controller's clock until NewHorizontalController sets the one it is given (a rehearsal's)",
	"internal/upstream/podautoscaler/horizontal.go Run wait.UntilWithContext":           "upstream's: restarts a worker that returned, a second later; the workers take their keys from the queue on the clock",
	"internal/upstream/podautoscaler/horizontal.go computeReplicasForMetric time.Now":   "upstream's: the controller's own latency metric, read by no figure",
	"internal/upstream/podautoscaler/horizontal.go computeReplicasForMetric time.Since": "upstream's: the controller's own latency metric, read by no figure",
	"internal/upstream/podautoscaler/horizontal.go reconcileAutoscaler time.Now":        "upstream's: the controller's own latency metric, read by no figure",
	"internal/upstream/podautoscaler/horizontal.go reconcileAutoscaler time.Since":      "upstream's: the controller's own latency metric, read by no figure",
	"internal/cluster/apiserver.go countRequests time.Now":                              "the time the API server took on a request, reported as wall time (clock.requests)",
	"internal/cluster/apiserver.go countRequests time.Since":                            "the time the API server took on a request, reported as wall time (clock.requests)",
	"internal/cluster/clocked.go runClockedControllers wait.Until":                      "as kube-controller-manager does: the clocked controllers' REST mapper learns of new kinds (CRDs, none added while a rehearsal replays) at most 30 s late",
	"internal/cluster/policystatus.go startAfterReady wait.Until":                       "as kube-controller-manager does: the policy status controller's REST mapper learns of new kinds at most 30 s late; the status decides no admission",
	"internal/cluster/cluster.go clock clock.RealClock":                                 "the cluster's clock when it is given none (berth up); a rehearsal gives its own",
	"internal/cluster/cluster.go Start time.Now":                                        "berth up's progress lines, its start-up time and the state directory's creation, in wall time",
	"internal/cluster/cluster.go Start time.Since":                                      "berth up's progress lines and its start-up time, in wall time",
	"internal/cluster/cluster.go Start wait.PollUntilContextCancel":                     "kube-controller-manager starts once the API server is healthy, before the rehearsal's clock runs",
	"internal/cluster/cluster.go waitFor wait.PollUntilContextCancel":                   "berth up waiting for its components to be ready, before the rehearsal's clock runs",
	"internal/cluster/drivers.go runDriver time.Now":                                    "how long a late storage driver's process ran, for the pause before it starts again; a rehearsal starts none (its classes are all made at start)",
	"internal/cluster/drivers.go runDriver time.Since":                                  "how long a late storage driver's process ran, for the pause before it starts again; a rehearsal starts none (its classes are all made at start)",
	"internal/cluster/drivers.go runDriver time.After":                                  "the pause before a late storage driver's process starts again; a rehearsal starts none (its classes are all made at start)",
	"internal/storage/drivers.go Serve clock.RealClock":                                 "a late storage driver's own process keeps the wall clock (berth up); a rehearsal's drivers are all made at start, on its clock",
	"internal/cluster/cluster.go Stop time.After":                                       "a component ignoring its context must not keep the cluster from stopping",
	"internal/cluster/etcd.go startEtcd time.After":                                     "how long berth waits for etcd to start before it gives up",
	"internal/cluster/quotaview.go wrote time.Now":                                      "when a ResourceQuota write was made, to give up waiting for it after 10 s of wall time (traced)",
	"internal/cluster/quotaview.go seen time.Since":                                     "traced only: how long the quota admission's view took to see a write",
	"internal/cluster/quotaview.go giveUp time.NewTicker":                               "looks once a second of wall time for writes the view never saw",
	"internal/cluster/quotaview.go giveUp time.Since":                                   "gives up on a write the view never saw after 10 s of wall time",
}

// wallClockCalls are the calls that read or wait on the wall clock, by
// the import path of their package.
var wallClockCalls = map[string][]string{
	"time":                              {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick"},
	"k8s.io/utils/clock":                {"RealClock"},
	"k8s.io/apimachinery/pkg/util/wait": {"Until", "UntilWithContext", "Forever", "Jitter", "JitterUntil", "JitterUntilWithContext", "NonSlidingUntil", "Poll", "PollImmediate", "PollUntil", "PollInfinite", "PollUntilContextTimeout", "PollUntilContextCancel", "PollImmediateUntil", "ExponentialBackoff", "ExponentialBackoffWithContext"},
}

// TestRehearsalCodeKeepsTheClock fails on a wall-clock read or wait in
// a package that runs in a rehearsal, unless wallClockAllowed says why it
// is safe; it also fails on an allowance nothing uses any more.
func TestRehearsalCodeKeepsTheClock(t *testing.T) {
	used := map[string]bool{}
	for _, dir := range rehearsalPackages {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s: no Go files; is rehearsalPackages out of date?", dir)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			for _, c := range wallClockUses(t, f) {
				key := fmt.Sprintf("%s/%s %s %s", dir, filepath.Base(f), c.function, c.call)
				if _, ok := wallClockAllowed[key]; ok {
					used[key] = true
					continue
				}
				t.Errorf("%s/%s:%d: %s reads or waits on the wall clock in code that runs in a rehearsal, in %s: take the clock the component is given (a simtime.Virtual or a k8s.io/utils/clock interface), or, if it decides nothing a rehearsal reports, add %q to wallClockAllowed with why",
					dir, filepath.Base(f), c.line, c.call, c.function, key)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(wallClockAllowed)) {
		if !used[key] {
			t.Errorf("wallClockAllowed has %q, which no code uses any more: remove it", key)
		}
	}
}

type wallClockUse struct {
	function, call string
	line           int
}

// wallClockUses finds the wall-clock calls in a file, each with the
// function it is in ("" at package level).
func wallClockUses(t *testing.T, path string) []wallClockUse {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The names the file gives the packages of wallClockCalls.
	names := map[string]string{}
	for _, imp := range file.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := wallClockCalls[p]; !ok {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	if len(names) == 0 {
		return nil
	}
	var out []wallClockUse
	for _, decl := range file.Decls {
		function := ""
		if fd, ok := decl.(*ast.FuncDecl); ok {
			function = fd.Name.Name
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || pkg.Obj != nil { // a local variable, not a package
				return true
			}
			if p, ok := names[pkg.Name]; ok && slices.Contains(wallClockCalls[p], sel.Sel.Name) {
				out = append(out, wallClockUse{function: function, call: pkg.Name + "." + sel.Sel.Name, line: fset.Position(sel.Pos()).Line})
			}
			return true
		})
	}
	return out
}

// The guard finds a wall-clock read added to a rehearsal package, under
// whatever name the file imports the time package.
func TestWallClockUsesFindsAnAddedRead(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import (
	stdtime "time"

	"k8s.io/utils/clock"
)

func decide(c clock.PassiveClock) bool {
	return stdtime.Since(c.Now()) > 0
}
`
	path := filepath.Join(dir, "p.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := wallClockUses(t, path)
	if len(got) != 1 || got[0].call != "stdtime.Since" || got[0].function != "decide" || got[0].line != 10 {
		t.Errorf("found %+v; want stdtime.Since in decide at line 10", got)
	}
}
