package dash

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/listing"
)

// The cached lister answers pod lists from the cache where the cache can
// (labels, and the fields the API server indexes pods by), and sends the
// rest to the API server. The cache and the API server hold different
// pods here, so each answer says where it came from.
func TestCachedListerListsFromTheCacheWhereItCan(t *testing.T) {
	pod := func(name, ns string, phase corev1.PodPhase, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}}, Status: corev1.PodStatus{Phase: phase}}
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{pod("cached-running", "a", corev1.PodRunning, "web"), pod("cached-done", "a", corev1.PodSucceeded, "web"), pod("cached-b", "b", corev1.PodPending, "etl")} {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	api := fake.NewSimpleClientset(pod("from-api", "a", corev1.PodRunning, "web"))
	c := &cachedLister{api: listing.FromAPI(api), pods: corelisters.NewPodLister(idx)}
	names := func(ns string, o metav1.ListOptions) []string {
		t.Helper()
		l, err := c.Pods(context.Background(), ns, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range l.Items {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		ns   string
		opts metav1.ListOptions
		want string
	}{
		{"", metav1.ListOptions{FieldSelector: activePodsForTest}, "[cached-b cached-running]"},
		{"a", metav1.ListOptions{}, "[cached-done cached-running]"},
		{"", metav1.ListOptions{LabelSelector: "app=etl"}, "[cached-b]"},
		{"", metav1.ListOptions{FieldSelector: "spec.schedulerName=default-scheduler"}, "[from-api]"},
		{"", metav1.ListOptions{Limit: 500, Continue: "token"}, "[from-api]"},
	} {
		got := names(tc.ns, tc.opts)
		sort.Strings(got)
		if s := "[" + strings.Join(got, " ") + "]"; s != tc.want {
			t.Errorf("List(%q, %+v) = %s; want %s", tc.ns, tc.opts, s, tc.want)
		}
	}
	// A pod from the cache is a copy: changing it leaves the cache alone.
	l, _ := c.Pods(context.Background(), "b", metav1.ListOptions{})
	l.Items[0].Labels["app"] = "changed"
	if p, _ := corelisters.NewPodLister(idx).Pods("b").Get("cached-b"); p.Labels["app"] != "etl" {
		t.Error("changing a listed pod changed the cache")
	}
}

const activePodsForTest = "status.phase!=Succeeded,status.phase!=Failed"

// A Job submitted is a change the pages are read again for, though it
// has no pod yet: Kueue holds one in a full queue with none.
func TestAJobIsAChange(t *testing.T) {
	c := fake.NewClientset()
	changes := make(chan struct{}, 100)
	w, err := newWatched(c, func() { changes <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), w.synced...) {
		t.Fatal("the informers did not sync")
	}
	for len(changes) > 0 {
		<-changes
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "team-b", Labels: map[string]string{v1alpha1.LabelKueueQueueName: "team-b"}}}
	if _, err := c.BatchV1().Jobs("team-b").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Fatal("a Job was created and the dashboard was not told within 5s")
	}
}
