package kueue

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"berth.io/berth/internal/simtime"
)

// blockingCache is a cache whose reads wait until released, as a read
// of a kind whose informer is still listing does.
type blockingCache struct {
	cache.Cache
	entered, release chan struct{}
}

func (b blockingCache) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	b.entered <- struct{}{}
	<-b.release
	return nil
}

func (b blockingCache) List(context.Context, client.ObjectList, ...client.ListOption) error {
	b.entered <- struct{}{}
	<-b.release
	return nil
}

// A read of Kueue's cache counts as work in flight on the clock until it
// returns, so the clock does not step while a reconciler waits for an
// informer it started on first use.
func TestCountedCacheCountsReadsInFlight(t *testing.T) {
	reads := simtime.NewActivity().Counter("reads")
	inner := blockingCache{entered: make(chan struct{}), release: make(chan struct{})}
	newCache := countReads(func(*rest.Config, cache.Options) (cache.Cache, error) { return inner, nil }, reads)
	c, err := newCache(nil, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() error{
		"Get":  func() error { return c.Get(context.Background(), client.ObjectKey{Name: "p"}, &corev1.Pod{}) },
		"List": func() error { return c.List(context.Background(), &corev1.PodList{}) },
	} {
		done := make(chan error)
		go func() { done <- read() }()
		<-inner.entered
		if n := reads.InFlight(); n != 1 {
			t.Errorf("%s waiting: %d reads in flight; want 1", name, n)
		}
		inner.release <- struct{}{}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := reads.InFlight(); n != 0 {
			t.Errorf("%s returned: %d reads in flight; want 0", name, n)
		}
	}
}
