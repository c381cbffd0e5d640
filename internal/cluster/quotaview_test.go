package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/internal/simtime"
)

func quota(version string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gpu", ResourceVersion: version}}
}

// The clock waits for a write of a ResourceQuota until the informer the
// quota admission lists holds that version, and only that long.
func TestQuotaViewHoldsTheClockUntilTheInformerHasTheWrite(t *testing.T) {
	a := simtime.NewActivity()
	v := newQuotaView(a)
	v.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	busy := func(want bool, when string) {
		t.Helper()
		if got := a.Busy() != ""; got != want {
			t.Errorf("%s: busy = %v (%q); want %v", when, got, a.Busy(), want)
		}
	}

	// The informer's store and handlers as the informer drives them: the
	// store first, then the handlers.
	see := func(q *corev1.ResourceQuota) {
		if err := v.store.Update(q); err != nil {
			t.Fatal(err)
		}
		v.seen(q, false)
	}

	see(quota("10"))
	busy(false, "the informer has version 10")
	v.wrote(quota("10"), false)
	busy(false, "an update that wrote nothing (version 10 again)")

	v.wrote(quota("12"), false)
	busy(true, "version 12 written, the informer at 10")
	v.wrote(quota("14"), false)
	see(quota("12"))
	busy(true, "version 14 written, the informer at 12")
	see(quota("14"))
	busy(false, "the informer at 14")

	// The informer was faster than the storage's note.
	see(quota("16"))
	v.wrote(quota("16"), false)
	busy(false, "version 16 seen before it was noted")

	v.wrote(quota("18"), true)
	busy(true, "deleted, the informer still holding it")
	if err := v.store.Delete(quota("18")); err != nil {
		t.Fatal(err)
	}
	v.seen(cache.DeletedFinalStateUnknown{Key: "team-a/gpu", Obj: quota("16")}, false)
	busy(false, "the informer saw the delete")
	v.wrote(quota("18"), true)
	busy(false, "deleted again, the informer holding nothing")
}
