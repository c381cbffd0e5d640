// Package slim builds the informer factories of berth's in-process
// controllers. Their caches hold every pod and node of the cluster, one
// copy per factory; on a 150,000-pod cluster the managed fields (who set
// which field, as server-side apply records it) are a third of each pod,
// and no berth controller reads them. slim's factories drop them as
// objects enter the cache, as controller-runtime's
// TransformStripManagedFields does.
//
// An object from these caches written back keeps its managed fields on the
// server: an update that omits them leaves them as they are.
package slim

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Informers is informers.NewSharedInformerFactoryWithOptions whose
// informers drop managed fields.
func Informers(client kubernetes.Interface, resync time.Duration, opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
	opts = append(opts, informers.WithTransform(StripManagedFields))
	return informers.NewSharedInformerFactoryWithOptions(client, resync, opts...)
}

// StripManagedFields is a cache.TransformFunc that drops an object's
// managed fields; anything that is not an object (a deleted object's
// tombstone) passes as it is.
func StripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
