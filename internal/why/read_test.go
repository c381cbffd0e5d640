package why

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/internal/objtest"
)

// ReadAll reads scheduling events only where a pod waits: every
// namespace with a Pending pod that is not being deleted, once each.
func TestWaitingNamespaces(t *testing.T) {
	deleting := *objtest.MakePod("gone", "p").Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	noPhase := *objtest.MakePod("fresh", "p").Obj()
	noPhase.Status.Phase = ""
	pods := []corev1.Pod{
		*objtest.MakePod("web", "a").Obj(),
		*objtest.MakePod("web", "b").Obj(),
		*objtest.MakePod("batch", "a").Obj(),
		*objtest.MakePod("quiet", "a").On("n-1").Obj(),
		deleting,
		noPhase,
	}
	if got, want := waitingNamespaces(pods, ""), []string{"batch", "fresh", "web"}; !slices.Equal(got, want) {
		t.Errorf("all namespaces: %v, want %v", got, want)
	}
	if got, want := waitingNamespaces(pods, "web"), []string{"web"}; !slices.Equal(got, want) {
		t.Errorf("namespace web: %v, want %v", got, want)
	}
	if got := waitingNamespaces(pods, "quiet"); len(got) != 0 {
		t.Errorf("namespace quiet, nothing waiting: %v", got)
	}
}
