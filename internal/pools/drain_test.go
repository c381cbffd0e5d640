package pools

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// evictions is a fake API server's Eviction API: it deletes the pod, or
// refuses with a budget's 429 for the pods in held.
func evictions(t *testing.T, held map[string]bool, pods ...*corev1.Pod) (*fake.Clientset, func() map[string]*metav1.DeleteOptions) {
	t.Helper()
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	c := fake.NewClientset(objs...)
	var mu sync.Mutex
	got := map[string]*metav1.DeleteOptions{}
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		if held[ev.Name] {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		mu.Lock()
		got[ev.Name] = ev.DeleteOptions
		mu.Unlock()
		return true, nil, c.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ev.Namespace, ev.Name)
	})
	return c, func() map[string]*metav1.DeleteOptions {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

func drainPod(name string, grace int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "n-1", TerminationGracePeriodSeconds: &grace}}
}

// The autoscaler's settings: each pod's grace capped at MaxGrace, and
// an Evicted call per pod; pools' (no MaxGrace) leave the pod its own.
func TestEvictGrace(t *testing.T) {
	long, short := drainPod("long", 600), drainPod("short", 5)
	c, got := evictions(t, nil, long, short)
	var mu sync.Mutex
	var told []string
	grace := int64(60)
	d := &Drainer{Client: c, MaxGrace: &grace, Evicted: func(p *corev1.Pod) { mu.Lock(); told = append(told, p.Name); mu.Unlock() }}
	if err := d.Evict(context.Background(), "n-1", []*corev1.Pod{long, short}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{"long": 60, "short": 5} {
		if o := got()[name]; o == nil || o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != want {
			t.Errorf("pod %s evicted with %+v, want a grace period of %ds", name, o, want)
		}
	}
	if len(told) != 2 {
		t.Errorf("Evicted told of %v, want both pods", told)
	}

	c, got = evictions(t, nil, drainPod("own", 600))
	if err := (&Drainer{Client: c}).Evict(context.Background(), "n-1", []*corev1.Pod{drainPod("own", 600)}); err != nil {
		t.Fatal(err)
	}
	if o := got()["own"]; o != nil {
		t.Errorf("without MaxGrace the pod was evicted with %+v, want its own grace period", o)
	}
}

// A pod a budget holds back does not hold back the node's other pods
// (the autoscaler's drain evicted one pod after another, so a held first
// pod kept every other on the node), and the drain gives up with the
// budget's words once Timeout has passed.
func TestEvictHeldByBudget(t *testing.T) {
	held, free := drainPod("held", 30), drainPod("free", 30)
	c, got := evictions(t, map[string]bool{"held": true}, held, free)
	d := &Drainer{Client: c, Timeout: 50 * time.Millisecond, Retry: 10 * time.Millisecond}
	err := d.Evict(context.Background(), "n-1", []*corev1.Pod{held, free})
	var blocked *BlockedError
	if !errors.As(err, &blocked) || blocked.Pod != "ns/held" || blocked.Node != "n-1" {
		t.Fatalf("Evict = %v, want a BlockedError for ns/held on n-1", err)
	}
	if _, ok := got()["free"]; !ok {
		t.Errorf("pod free was not evicted while a budget held pod held")
	}
}
