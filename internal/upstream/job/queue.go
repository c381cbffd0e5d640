package job

import (
	"fmt"
	"reflect"
	"unsafe"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/utils/clock"

	"berth.io/berth/internal/upstream/clockqueue"
)

// newQueue is the Job controller's queue as upstream builds it (its rate
// limiter, name and clock), over berth's delaying queue: Jobs due at the
// same instant come out in the order of their keys, a Job queued or
// syncing is work the clock waits for, and a retry set during a sync
// counts from when the Job was queued (clockqueue says why each).
func newQueue(clk clock.WithTickerAndDelayedExecution) workqueue.TypedRateLimitingInterface[string] {
	return clockqueue.New("job", "the Job controller",
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](job.DefaultJobApiBackOff, job.MaxJobApiBackOff), clk)
}

// replaceQueue puts q in c's place for upstream's queue, which it shuts
// down (stopping its goroutine and its ticker on the clock). It must
// come before c runs, and before the informers c handles start.
// upstream's queue is an unexported field; TestReplaceQueue checks that
// it is still there, with that type.
func replaceQueue(c *job.Controller, q workqueue.TypedRateLimitingInterface[string]) error {
	f := reflect.ValueOf(c).Elem().FieldByName("queue")
	want := reflect.TypeFor[workqueue.TypedRateLimitingInterface[string]]()
	if !f.IsValid() || f.Type() != want {
		return fmt.Errorf("upstream's Job controller has no field queue of type %s: berth's queue for it needs updating (internal/upstream/job)", want)
	}
	field := (*workqueue.TypedRateLimitingInterface[string])(unsafe.Pointer(f.UnsafeAddr()))
	old := *field
	*field = q
	old.ShutDown()
	return nil
}
