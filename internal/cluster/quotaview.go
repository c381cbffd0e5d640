package cluster

import (
	"context"
	"strconv"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/internal/simtime"
)

// The API server's quota admission decides a create against the
// ResourceQuotas in its own informer (the API server watching itself over
// its loopback connection), not against storage. When a pod ends,
// kube-controller-manager's ResourceQuota controller writes the quota's
// lower usage; until the API server's informer has that write, a pod
// created in the quota's namespace is judged against the old usage and
// refused. On the wall clock the window is milliseconds. On a rehearsal's
// clock it decides the figures: a Job whose retry falls due at the moment
// a pod of its team ends is let in, or refused and retried one backoff
// later (seconds to a minute), by which of the two the machine ran first.
// Nothing else covers the gap: the event travels from etcd through the
// watch cache and a socket to an informer whose client berth does not
// build, so no counter and no followed watch sees it, and only a quiet
// window stood between it and the clock's next step.
//
// quotaView closes it: the API server's storage of ResourceQuotas notes
// each write's resourceVersion before the write's request ends, and the
// write stays work in flight (a counter of the clock's Activity) until the
// API server's own ResourceQuota informer, the one its quota admission
// lists, has seen that version or later.
type quotaView struct {
	inFlight *simtime.Counter
	// store is the informer's.
	store cache.Store

	mu sync.Mutex
	// pending is, by namespace/name, the latest version written that the
	// informer has not yet seen, and when it was written (wall time).
	pending map[string]pendingWrite
}

type pendingWrite struct {
	version uint64
	at      time.Time
}

// quotaViewGiveUp is how long a write may stay unseen before the view
// stops holding the clock for it: far beyond any delivery on a loopback
// connection, so only an informer that stopped watching reaches it, and
// the rehearsal goes on instead of waiting for ever.
const quotaViewGiveUp = 10 * time.Second

func newQuotaView(a *simtime.Activity) *quotaView {
	return &quotaView{
		inFlight: a.Counter("ResourceQuota writes not yet seen by the API server's quota admission"),
		pending:  map[string]pendingWrite{},
	}
}

// follow has the view follow informer, the one the quota admission lists.
func (v *quotaView) follow(informer cache.SharedIndexInformer) error {
	v.store = informer.GetStore()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.seen(obj, false) },
		UpdateFunc: func(_, obj any) { v.seen(obj, false) },
		DeleteFunc: func(obj any) { v.seen(obj, true) },
	})
	return err
}

// wrote notes a write of a ResourceQuota, obj as stored (as it was
// before, for a delete). A write the informer already has (an update
// that changed nothing writes nothing), or one it has already seen
// (the informer updates its store before it tells its handlers), is not
// waited for.
func (v *quotaView) wrote(obj runtime.Object, deleted bool) {
	key, version, ok := versionOf(obj)
	if !ok || v.store == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	held, exists, err := v.store.GetByKey(key)
	if err == nil {
		if deleted && !exists {
			return
		}
		if o, ok := held.(runtime.Object); ok && exists && !deleted {
			if _, have, ok := versionOf(o); ok && have >= version {
				return
			}
		}
	}
	if p, ok := v.pending[key]; ok {
		p.version = max(p.version, version)
		v.pending[key] = p
		return
	}
	v.pending[key] = pendingWrite{version: version, at: time.Now()}
	v.inFlight.Begin()
}

// seen notes the informer's copy of a ResourceQuota; gone, that it saw
// it deleted.
func (v *quotaView) seen(obj any, gone bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, gone = d.Obj, true
	}
	o, ok := obj.(runtime.Object)
	if !ok {
		return
	}
	key, version, ok := versionOf(o)
	if !ok {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.pending[key]
	if !ok || (!gone && version < p.version) {
		return
	}
	if simtime.Tracing {
		simtime.Tracef("quota admission saw ResourceQuota %s at %d, %s after it was written", key, version, time.Since(p.at).Round(time.Microsecond))
	}
	delete(v.pending, key)
	v.inFlight.End()
}

// giveUp stops holding the clock for writes the informer has not seen in
// quotaViewGiveUp.
func (v *quotaView) giveUp(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v.mu.Lock()
		for key, p := range v.pending {
			if time.Since(p.at) > quotaViewGiveUp {
				simtime.Tracef("quota admission never saw ResourceQuota %s at %d: no longer waited for", key, p.version)
				delete(v.pending, key)
				v.inFlight.End()
			}
		}
		v.mu.Unlock()
	}
}

// versionOf is obj's namespace/name and resourceVersion, a revision of
// berth's own etcd.
func versionOf(obj runtime.Object) (key string, version uint64, ok bool) {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return "", 0, false
	}
	version, err = strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return "", 0, false
	}
	return m.GetNamespace() + "/" + m.GetName(), version, true
}

// quotaViewOptions is a RESTOptionsGetter whose ResourceQuota storage
// tells view of every write.
type quotaViewOptions struct {
	generic.RESTOptionsGetter
	view *quotaView
}

var resourceQuotas = schema.GroupResource{Resource: "resourcequotas"}

func (o quotaViewOptions) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := o.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || resource != resourceQuotas {
		return opts, err
	}
	return wrapStorage(opts, func(s storage.Interface) storage.Interface { return viewedStorage{Interface: s, view: o.view} }), nil
}

// viewedStorage notes each write it makes, from the object it returns.
type viewedStorage struct {
	storage.Interface
	view *quotaView
}

func (s viewedStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	err := s.Interface.Create(ctx, key, obj, out, ttl)
	if err == nil {
		s.view.wrote(out, false)
	}
	return err
}

func (s viewedStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object,
) error {
	err := s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
	if err == nil {
		s.view.wrote(destination, false)
	}
	return err
}

func (s viewedStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions,
) error {
	err := s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
	if err == nil {
		s.view.wrote(out, true)
	}
	return err
}
