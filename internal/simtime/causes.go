package simtime

import (
	"runtime"
	"strings"
	"sync"
	"time"
)

// A timer's cause is the component that set it, so that a rehearsal's
// report can say which components stopped the clock and how long the
// cluster took to settle after them: what bounds a slow replay.

// componentsByFunc name the component a timer belongs to by the function
// that set it, the first frame outside the clock and the queues that wrap
// it; the first prefix that matches wins.
var componentsByFunc = []struct{ prefix, name string }{
	{"sigs.k8s.io/kwok/", "KWOK (simulated kubelets' stages)"},
	{"berth.io/berth/internal/upstream/job.", "Job controller"},
	{"k8s.io/kubernetes/pkg/controller/job.", "Job controller"},
	{"berth.io/berth/internal/upstream/podautoscaler.", "HPA controller"},
	{"k8s.io/kubernetes/pkg/controller/podautoscaler", "HPA controller"},
	{"k8s.io/kubernetes/pkg/controller/disruption.", "disruption controller"},
	{"berth.io/berth/internal/cluster.flushLeftovers", "kube-scheduler"},
	{"k8s.io/kubernetes/pkg/scheduler/", "kube-scheduler"},
	{"berth.io/berth/internal/autoscaler.", "node autoscaler"},
	{"berth.io/berth/internal/rehearse.waitUntil", "the trace's rows"},
	{"berth.io/berth/internal/rehearse.", "the rehearsal (drains, interruptions, queue workers)"},
	{"berth.io/berth/internal/pools.", "drains"},
	{"berth.io/berth/internal/spot.", "spot interruptions"},
	{"berth.io/berth/internal/kubelets.", "simulated kubelets"},
	{"berth.io/berth/internal/metricsapi.", "queue workers (metrics APIs)"},
	{"berth.io/berth/internal/storage.", "volume provisioner"},
	{"sigs.k8s.io/sig-storage-lib-external-provisioner/", "volume provisioner"},
	{"sigs.k8s.io/karpenter/", "Karpenter"},
	{"berth.io/berth/internal/karpenter.", "Karpenter"},
	{"sigs.k8s.io/controller-runtime/", "controller-runtime work queues"},
	{"berth.io/berth/internal/crclock.", "controller-runtime work queues"},
	{"berth.io/berth/internal/controller.", "berth's controllers"},
}

// workQueueCause is the cause of a timer a client-go work queue set from
// its own goroutine, where nothing says whose queue it is.
const workQueueCause = "client-go work queues"

// otherCause is the cause of a timer set where no component is named.
const otherCause = "other"

// causeDepth is how many frames a timer's cause is looked for in.
const causeDepth = 12

// causeCache remembers the cause of each call stack seen: most timers are
// set from a few places, and the frames' names need not be looked up again.
var causeCache sync.Map // [causeDepth]uintptr -> string

// timerCause is the component that is setting a timer, from its caller's
// stack.
func timerCause() string {
	var pcs [causeDepth]uintptr
	n := runtime.Callers(3, pcs[:])
	if v, ok := causeCache.Load(pcs); ok {
		return v.(string)
	}
	cause := causeOf(pcs[:n])
	causeCache.Store(pcs, cause)
	return cause
}

// causeOf names the component of the first frame outside the clock and
// the queues and clocks that wrap it.
func causeOf(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	queue := false
	for {
		f, more := frames.Next()
		fn := f.Function
		switch {
		case strings.HasPrefix(fn, "berth.io/berth/internal/simtime."), strings.Contains(fn, "k8s.io/utils/clock"):
		case strings.Contains(fn, "k8s.io/client-go/util/workqueue"):
			queue = true
		case strings.HasPrefix(fn, "runtime."):
		default:
			if name := componentOf(fn); name != "" {
				return name
			}
			if queue {
				return workQueueCause
			}
			return otherCause
		}
		if !more {
			break
		}
	}
	if queue {
		return workQueueCause
	}
	return otherCause
}

// componentOf is the component a function belongs to, or "".
func componentOf(fn string) string {
	for _, c := range componentsByFunc {
		if strings.HasPrefix(fn, c.prefix) {
			return c.name
		}
	}
	return ""
}

// Cause is what one component's timers did to a Driver's clock.
type Cause struct {
	// Moments counts the moments of the clock at which a timer of the
	// component fired, Alone those at which no other component's did:
	// a moment that would not be without it.
	Moments int `json:"moments"`
	Alone   int `json:"alone"`
	// Timers counts its timers fired.
	Timers int `json:"timers"`
	// Settling is its share of the wall time the cluster took to settle
	// after its timers fired (shared evenly with the other components
	// whose timers fired with them).
	Settling time.Duration `json:"settling"`
}
