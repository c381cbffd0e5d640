package job

import (
	"context"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"

	"berth.io/berth/internal/simtime"
)

var start = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

// TestReplaceQueue: berth's queue takes the place of upstream's inside
// upstream's Job controller (an unexported field, so a change upstream
// shows here), and upstream's is shut down.
func TestReplaceQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := simtime.NewClock(start, time.Second)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := newControllerWithClock(ctx, client, clk, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := reflect.ValueOf(c).Elem().FieldByName("queue")
	field := (*workqueue.TypedRateLimitingInterface[string])(unsafe.Pointer(f.UnsafeAddr()))
	old := *field

	q := newQueue(clk)
	if err := replaceQueue(c, q); err != nil {
		t.Fatal(err)
	}
	if *field != q {
		t.Error("the controller's queue is not berth's after replaceQueue")
	}
	if !old.ShuttingDown() {
		t.Error("upstream's queue was left running")
	}
}
