package simtime

import (
	"context"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// DropErrorBackoff leaves the process's handlers of the errors that
// Kubernetes components report through utilruntime.HandleError with
// logging alone, without upstream's second handler, which sleeps: it
// holds a goroutine that reports an error within a millisecond of the
// last one, anywhere in the process, for the rest of that millisecond of
// wall time, asleep, which a Driver cannot tell from idle. The Job
// controller reports twice in a row when the quota refuses a pod (the
// create, then the sync), and only then sets its retry on the clock: on
// a busy machine the sleep outlasted the quiet window, the clock stepped
// first, and the retry came a second late, and every retry after it
// (seen 2026-12-07: a quota-refused Job let in at 1h15m13s in one replay
// and 1h15m3s in another). The backoff guards against a component that
// fails in a hot loop; a component on the clock retries on the clock.
// Call it before the components start, in a process whose components
// follow a rehearsal's clock.
func DropErrorBackoff() {
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{logError}
}

// logError logs as upstream's first handler does, at the caller of
// HandleError (HandleError → handleError → logError).
func logError(ctx context.Context, err error, msg string, keysAndValues ...any) {
	logger := klog.LoggerWithName(klog.FromContext(ctx).WithCallDepth(3), "UnhandledError")
	logger.Error(err, msg, keysAndValues...)
}

// NoThrottle turns off cfg's client-side rate limit, for a client in a
// process on a rehearsal's clock. client-go's token bucket makes a
// request that finds it empty wait on the wall clock before it is sent,
// where no counter has it yet and no goroutine runs: the clock could
// step while a controller's request waited its turn, and the request
// land a moment late, in one replay and not another. On the clock a
// request takes no trace time whatever its client's limit, and the
// simulated cluster has no API server to protect from a burst.
func NoThrottle(cfg *rest.Config) {
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
}
