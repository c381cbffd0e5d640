package scheduler

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

// TestTiesEndByName: two teams' Workloads created in the same second, of
// one priority, neither borrowing, come out of both of a cycle's
// orderings by namespace and name, in whichever order the cycle gathered
// them (upstream: that order, a map's).
func TestTiesEndByName(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 12, 7, 8, 35, 0, 0, time.UTC))
	wl := func(ns, name string) entry {
		return entry{Info: workload.Info{Obj: &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created}}}}
	}
	for _, in := range [][]entry{
		{wl("team-b", "batch-1"), wl("team-a", "batch-2")},
		{wl("team-a", "batch-2"), wl("team-b", "batch-1")},
	} {
		it := makeClassicalIterator(logr.Discard(), append([]entry(nil), in...), workload.Ordering{})
		var got []string
		for it.hasNext() {
			e := it.pop()
			got = append(got, e.Obj.Namespace+"/"+e.Obj.Name)
		}
		if len(got) != 2 || got[0] != "team-a/batch-2" || got[1] != "team-b/batch-1" {
			t.Errorf("from %s, %s: the cycle takes %v; want team-a/batch-2 first, by name", in[0].Obj.Name, in[1].Obj.Name, got)
		}

		c := entryComparer{log: logr.Discard()}
		a, b := in[0], in[1]
		if c.less(&a, &b, "") == c.less(&b, &a, "") {
			t.Errorf("fair sharing: %s and %s each come before the other, or neither: a tie left to the order they are met in", a.Obj.Name, b.Obj.Name)
		}
		if !c.less(ptr(wl("team-a", "batch-2")), ptr(wl("team-b", "batch-1")), "") {
			t.Error("fair sharing: team-a/batch-2 does not come before team-b/batch-1")
		}
	}
}

func ptr[T any](v T) *T { return &v }
