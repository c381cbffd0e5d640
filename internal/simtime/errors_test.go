package simtime

import (
	"errors"
	"io"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// Upstream's handlers make the second of two errors reported within a
// millisecond wait out the rest of it; without the backoff, a hundred
// errors in a row take no such wait.
func TestDropErrorBackoffLeavesNoSleep(t *testing.T) {
	saved := utilruntime.ErrorHandlers
	defer func() { utilruntime.ErrorHandlers = saved }()
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	defer klog.LogToStderr(true)
	burst := func() time.Duration {
		begin := time.Now()
		for range 100 {
			utilruntime.HandleError(errors.New("refused"))
		}
		return time.Since(begin)
	}
	// An error waits until a millisecond after the one before it came
	// (before that one's own wait): every other error of a burst waits,
	// at least 49 ms in all, however fast the machine.
	with := burst()
	if with < 45*time.Millisecond {
		t.Fatalf("100 errors with upstream's handlers took %s; want about 50 ms of backoff, or this test shows nothing", with)
	}
	DropErrorBackoff()
	if without := burst(); without > with/2 {
		t.Errorf("100 errors without the backoff took %s, with it %s; want no backoff", without, with)
	}
}
