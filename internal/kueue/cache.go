package kueue

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"berth.io/berth/internal/simtime"
)

// countedCache counts each read of Kueue's cache as work in flight on a
// rehearsal's clock, from its call until it returns. controller-runtime
// starts an informer for a kind the first time a reconciler reads it
// (Kueue's Job reconciler reads PriorityClasses, and Jobs' metadata,
// only when the first Job arrives), and the read waits for that
// informer's list on a wall-clock poll no clock can see: uncounted, the
// clock stepped while the read waited, and the Workloads of the Jobs
// submitted in a rehearsal's first second were made at a later moment,
// 1 or 10 seconds on, by how the machine's timing fell (2026-12-07,
// five replays of the retail week's first seconds).
type countedCache struct {
	cache.Cache
	reads *simtime.Counter
}

// countReads makes newCache's caches count their reads as reads' work.
func countReads(newCache cache.NewCacheFunc, reads *simtime.Counter) cache.NewCacheFunc {
	if newCache == nil {
		newCache = cache.New
	}
	return func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := newCache(config, opts)
		if err != nil {
			return nil, err
		}
		return countedCache{Cache: c, reads: reads}, nil
	}
}

func (c countedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads.Begin()
	defer c.reads.End()
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c countedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.reads.Begin()
	defer c.reads.End()
	return c.Cache.List(ctx, list, opts...)
}

func (c countedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.reads.Begin()
	defer c.reads.End()
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c countedCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	c.reads.Begin()
	defer c.reads.End()
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}
