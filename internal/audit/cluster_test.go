package audit

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A user who may not list nodes still gets the audit of what they may
// read, with the kinds left out named. (Only reading is faked here; the
// rules run on a real cluster in test/e2e.)
func TestLoadClusterForbidden(t *testing.T) {
	kube := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "team-b"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}},
	)
	kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
	})
	inv, err := LoadCluster(context.Background(), kube, []string{"team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Pods) != 1 || inv.Pods[0].Name != "p" || len(inv.Nodes) != 0 {
		t.Errorf("read pods %v and %d nodes; want team-a's pod only", inv.Pods, len(inv.Nodes))
	}
	if diff := cmp.Diff([]string{"nodes (forbidden)"}, inv.Unread); diff != "" {
		t.Errorf("unread (-want +got):\n%s", diff)
	}
	if r := Check(inv, Options{}); !cmp.Equal(r.Unread, inv.Unread) {
		t.Errorf("the report does not say what was not read: %v", r.Unread)
	}
}
