package slim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestStripManagedFields(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:          "p",
		Labels:        map[string]string{"app": "a"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}},
	}}
	out, err := StripManagedFields(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.ManagedFields != nil {
		t.Errorf("managed fields kept: %v", got.ManagedFields)
	}
	if got.Name != "p" || got.Labels["app"] != "a" {
		t.Errorf("the rest of the object changed: %+v", got.ObjectMeta)
	}

	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if out, err := StripManagedFields(tombstone); err != nil || out != any(tombstone) {
		t.Errorf("a tombstone should pass unchanged, got %v, %v", out, err)
	}
}
