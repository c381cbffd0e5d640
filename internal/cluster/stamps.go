package cluster

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/apis/batch"
	"k8s.io/utils/clock"
)

// The API server stamps an object's creationTimestamp, and a graceful
// deletion's deletionTimestamp, with the wall clock (metav1.Now in its
// generic registry), which takes no clock. On a rehearsal's clock, that
// runs ahead of the wall clock, those stamps would make every object look
// old to the components that read them against the rehearsal's clock
// (Karpenter expires a NodeClaim from its creationTimestamp, and orders
// the pods it provisions for by theirs; the node autoscaler counts a
// node's age from it). stampedOptions wraps the API server's storage so
// that both stamps are the rehearsal clock's: the registry sets them as
// it does, and the storage replaces them with the clock's time before the
// object is written, so that the object stored, watched and returned
// carries the clock's.
//
// It also gives each object a UID of the rehearsal's (uidSource), where
// the registry draws a random one: a UID is the last tie-break of
// components that order by time (Kueue's queues order Workloads created
// in the same second by UID), and a random one would make two replays of
// one seed order them differently. Nothing else of the object is
// touched.

// stampedOptions is a RESTOptionsGetter whose storages stamp with clk
// and take UIDs from uids.
type stampedOptions struct {
	generic.RESTOptionsGetter
	clock clock.PassiveClock
	uids  *uidSource
}

// uidSource makes the UIDs of a rehearsal's objects: a name-based UUID
// (RFC 4122 version 5) of the object's storage key and how many objects
// were created under that key before it, so the same object of a replay
// gets the same UID in every replay, unique as a random one (no two
// creations share a key and a count).
type uidSource struct {
	mu      sync.Mutex
	created map[string]int
}

// uidSpace is the UUID namespace of berth's rehearsal UIDs.
var uidSpace = uuid.MustParse("5b0b6c1e-6f1d-4e55-9a3b-6265727468a1")

func (u *uidSource) next(key string) types.UID {
	u.mu.Lock()
	n := u.created[key]
	u.created[key] = n + 1
	u.mu.Unlock()
	return types.UID(uuid.NewSHA1(uidSpace, []byte(key+"\x00"+strconv.Itoa(n))).String())
}

func (o stampedOptions) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := o.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	return wrapStorage(opts, func(s storage.Interface) storage.Interface {
		return stampedStorage{Interface: s, clock: o.clock, uids: o.uids}
	}), nil
}

// wrapStorage has opts decorate the storage it makes with wrap, after
// the decorator it had (the watch cache).
func wrapStorage(opts generic.RESTOptions, wrap func(storage.Interface) storage.Interface) generic.RESTOptions {
	decorate := opts.Decorator
	if decorate == nil {
		decorate = generic.UndecoratedStorage
	}
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(obj runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrsFunc storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrsFunc, trigger, indexers)
		if err != nil {
			return s, destroy, err
		}
		return wrap(s), destroy, nil
	}
	return opts
}

// stampedStorage stamps objects with clock as they are created or first
// marked for deletion, and gives them UIDs from uids.
type stampedStorage struct {
	storage.Interface
	clock clock.PassiveClock
	uids  *uidSource
}

func (s stampedStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if m, err := apimeta.Accessor(obj); err == nil {
		m.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
		if s.uids != nil {
			drawn, uid := m.GetUID(), s.uids.next(key)
			m.SetUID(uid)
			regenerateSelector(obj, drawn, uid)
		}
	}
	return s.Interface.Create(ctx, key, obj, out, ttl)
}

// regenerateSelector gives a Job's generated selector the UID its
// storage gave it. The Job registry makes a selector (and the pod
// template's labels) from the UID the registry drew, before the object
// reaches storage; left with the drawn one, every update of the Job's
// spec (Kueue's unsuspending it) would fail validation, which requires
// the selector's controller-uid to be the Job's own. Only a label equal
// to the drawn UID is rewritten: a selector the user wrote is theirs. No
// other built-in kind uses its UID before storage.
func regenerateSelector(obj runtime.Object, drawn, uid types.UID) {
	job, ok := obj.(*batch.Job)
	if !ok || drawn == "" {
		return
	}
	for _, labels := range []map[string]string{job.Spec.Template.Labels, selectorLabels(job)} {
		for _, key := range []string{batch.ControllerUidLabel, batch.LegacyControllerUidLabel} {
			if labels[key] == string(drawn) {
				labels[key] = string(uid)
			}
		}
	}
}

func selectorLabels(job *batch.Job) map[string]string {
	if job.Spec.Selector == nil {
		return nil
	}
	return job.Spec.Selector.MatchLabels
}

func (s stampedStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object,
) error {
	stamped := func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		marked := false
		if m, err := apimeta.Accessor(input); err == nil {
			marked = m.GetDeletionTimestamp() != nil
		}
		out, ttl, err := tryUpdate(input, res)
		if err != nil || marked {
			return out, ttl, err
		}
		// Newly marked for deletion: the registry set the time the grace
		// period ends, now plus the grace period.
		if m, merr := apimeta.Accessor(out); merr == nil && m.GetDeletionTimestamp() != nil {
			var grace time.Duration
			if g := m.GetDeletionGracePeriodSeconds(); g != nil {
				grace = time.Duration(*g) * time.Second
			}
			at := metav1.NewTime(s.clock.Now().Add(grace))
			m.SetDeletionTimestamp(&at)
		}
		return out, ttl, err
	}
	return s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, stamped, cachedExistingObject)
}
