// Package controller is the loop of berth's in-process controllers,
// written once, in the shape of Karpenter's: each controller is a
// package with NewController(...), Reconcile(ctx, key) and
// Register(*Manager), and internal/cluster lists them in one file.
//
// Register says what the controller watches: the Builder adds event
// handlers to informers that queue keys (a node's name, a namespace) on a
// rate-limited queue, and registers a Runner that waits for those
// informers to sync and reconciles one key at a time until its context
// ends. A key that fails is queued again with exponential backoff; one
// whose Result asks is looked at again after a delay. Delays count the
// Manager's clock: a rehearsal's, where the cluster runs on one. A controller with
// a loop of its own (the autoscaler's scans) registers that loop instead.
//
// The Manager only collects what registered (Each hands it to whoever
// runs it) and the event recorders. It starts no informers: whoever made
// a factory starts it once every controller has registered, so that
// indexers and handlers are in place first.
package controller

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Reconciler brings what one key names to what the cluster asks of it.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) (Result, error)
}

// Result says when to reconcile a key again. The zero Result waits for
// the next event that queues it.
type Result struct {
	// RequeueAfter, when positive, reconciles the key again after it.
	RequeueAfter time.Duration
}

// Runner reconciles the keys its watches queue, one at a time.
type Runner struct {
	name       string
	reconciler Reconciler
	queue      workqueue.TypedRateLimitingInterface[string]
	// synced report whether each handler has seen its informer's
	// initial list.
	synced []cache.InformerSynced
}

func newRunner(name string, r Reconciler, clk clock.WithTicker) *Runner {
	return &Runner{
		name:       name,
		reconciler: r,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk}),
	}
}

// Run waits for the watched informers to sync, then reconciles queued
// keys until ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	defer r.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), r.synced...) {
		return nil // stopped before the caches synced
	}
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for r.next(ctx) {
	}
	return nil
}

func (r *Runner) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	res, err := r.reconciler.Reconcile(ctx, key)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "reconciling", "controller", r.name, "key", key)
			r.queue.AddRateLimited(key)
		}
	case res.RequeueAfter > 0:
		r.queue.Forget(key)
		r.queue.AddAfter(key, res.RequeueAfter)
	default:
		r.queue.Forget(key)
	}
	return true
}
