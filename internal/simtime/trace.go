package simtime

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Tracing, set by BERTH_SIMTIME_TRACE=1 in the environment, prints to
// stderr each step of the clock with where each timer it fires was set,
// how long the cluster took to settle before it, and (through Tracef)
// each request the API server served: for finding what stops a
// rehearsal's clock, and what it waits for. BERTH_SIMTIME_TRACE=steps
// prints the steps alone, which slows a rehearsal less (a race that
// the full trace's writes hide may show with it).
var Tracing = os.Getenv("BERTH_SIMTIME_TRACE") == "1"

var traceTimers = Tracing || os.Getenv("BERTH_SIMTIME_TRACE") == "steps"

// Tracef prints a line of the trace, when Tracing.
func Tracef(format string, args ...any) {
	if Tracing {
		fmt.Fprintf(os.Stderr, "simtime: "+format+"\n", args...)
	}
}

// callers names the frames that set a timer, outside this package and
// the queues that wrap the clock.
func callers() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var out []string
	for {
		f, more := frames.Next()
		if !strings.Contains(f.Function, "simtime.") && !strings.Contains(f.Function, "util/workqueue") && !strings.Contains(f.Function, "utils/clock") {
			out = append(out, f.Function)
			if len(out) == 3 {
				break
			}
		}
		if !more {
			break
		}
	}
	return strings.Join(out, " < ")
}

func traceAdvance(now time.Time, due []*timer) {
	counts := map[string]int{}
	for _, t := range due {
		counts[t.caller]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "simtime: %s (wall %s): %d timers of phase %d\n", now.Format(time.TimeOnly), time.Now().Format("15:04:05.000"), len(due), due[0].phase)
	for c, n := range counts {
		fmt.Fprintf(&b, "  %d x %s\n", n, c)
	}
	os.Stderr.WriteString(b.String())
}
