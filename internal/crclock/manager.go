// Package crclock puts controllers built with controller-runtime's
// builder on a rehearsal's clock: Karpenter's and Kueue's, whose
// queues' delays (a Result's RequeueAfter, the rate limiter's backoff)
// would otherwise count wall time.
package crclock

import (
	"fmt"
	"reflect"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Manager returns mgr on clk: each controller registered through it gets
// a queue whose delays (a Result's RequeueAfter, the rate limiter's
// backoff) count clk.
//
// controller-runtime's builder offers no way to choose a controller's
// queue; the controller it builds keeps the function that makes its
// queue in an exported field, NewQueue, and makes the queue only when it
// starts. The manager sets that field as the builder adds the
// controller, before it starts: the queue is client-go's rate-limited
// queue with the controller's own rate limiter, as controller-runtime
// makes it when its priority queue is off, on the clock.
func Manager(mgr manager.Manager, clk clock.WithTicker) manager.Manager {
	return &clockedManager{Manager: mgr, clock: clk}
}

type clockedManager struct {
	manager.Manager
	clock clock.WithTicker
}

// newQueue is the type of a reconcile.Request controller's NewQueue.
type newQueue = func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request]

// Add sets the queue of a controller runnable before adding it.
func (m *clockedManager) Add(r manager.Runnable) error {
	if err := m.clockQueue(r); err != nil {
		return err
	}
	return m.Manager.Add(r)
}

// clockQueue sets r's NewQueue, if r is a controller of
// reconcile.Requests, to make a queue on m's clock.
func (m *clockedManager) clockQueue(r manager.Runnable) error {
	v := reflect.ValueOf(r)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("NewQueue")
	if !f.IsValid() {
		return nil
	}
	clocked := func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, Clock: m.clock})
	}
	fn := reflect.ValueOf(newQueue(clocked))
	if !f.CanSet() || f.Type() != fn.Type() {
		return fmt.Errorf("controller %T's NewQueue is a %s, not a queue of reconcile.Requests berth can put on the rehearsal's clock", r, f.Type())
	}
	f.Set(fn)
	return nil
}
