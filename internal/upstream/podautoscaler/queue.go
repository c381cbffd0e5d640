package podautoscaler

import (
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"berth.io/berth/internal/upstream/clockqueue"
)

// newQueue is the controller's queue as upstream builds it (the sync
// period's rate limiter, its name) on clk, over berth's delaying queue:
// an HPA's sync is work the clock waits for from when it falls due until
// it is done, and its next sync counts from when it fell due, so the
// syncs keep the sync period's grid in every replay (clockqueue says
// why). berth's patch (patch_test.go) has NewHorizontalController call
// it; this file is berth's, not generated.
func newQueue(limiter workqueue.TypedRateLimiter[string], clk clock.WithTickerAndDelayedExecution) workqueue.TypedRateLimitingInterface[string] {
	return clockqueue.New("horizontalpodautoscaler", "the HPA controller", limiter, clk)
}
