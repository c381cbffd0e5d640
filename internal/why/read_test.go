package why

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadAll reads scheduling events only where a pod waits: every
// namespace with a Pending pod that is not being deleted, once each.
func TestWaitingNamespaces(t *testing.T) {
	deleting := makePod("gone", "p").obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	noPhase := makePod("fresh", "p").obj()
	noPhase.Status.Phase = ""
	pods := []corev1.Pod{
		makePod("web", "a").obj(),
		makePod("web", "b").obj(),
		makePod("batch", "a").obj(),
		makePod("quiet", "a").on("n-1").obj(),
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
