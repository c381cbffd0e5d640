package why

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// A Job Kueue holds is explained by Kueue's own words on its Workload,
// with the fix for what they say: waiting for quota, for a flavor its
// class reaches, preempted by its lender, or no Workload at all; a Job
// Kueue admitted or that finished is not Kueue's to explain.
func TestQueueCause(t *testing.T) {
	wl := func(conds ...metav1.Condition) *kueue.Workload {
		return &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-b3-x", Namespace: "team-b"}, Status: kueue.WorkloadStatus{Conditions: conds}}
	}
	waiting := func(msg string) metav1.Condition {
		return metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending", Message: msg}
	}
	for _, tc := range []struct {
		name      string
		queued    *Queued
		done      bool
		code      string
		says, fix string
	}{
		{"quota", &Queued{Queue: "team-b", Suspended: true, Workload: wl(waiting("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor gpu, 1 more needed"))},
			false, CauseQueueWaiting, "waits suspended in LocalQueue team-b, holding no quota: couldn't assign flavors", "raise the team's quota.gpu"},
		{"flavor", &Queued{Queue: "team-b", Suspended: true, Workload: wl(waiting("couldn't assign flavors to pod set main: flavor gpu doesn't match node affinity"))},
			false, CauseQueueWaiting, "doesn't match node affinity", "add the pool to the class's pools"},
		{"reclaimed", &Queued{Queue: "team-b", Suspended: true, Workload: wl(
			metav1.Condition{Type: kueue.WorkloadPreempted, Status: metav1.ConditionTrue, Reason: kueue.InCohortReclamationReason, Message: "Preempted to accommodate a workload (UID: u) due to reclamation within the cohort"},
			waiting("couldn't assign flavors"))},
			false, CauseQueuePreempted, "Kueue preempted job/team-b/b3 (InCohortReclamation: Preempted to accommodate", "queue.borrow: 0"},
		// A moment after the preemption: its old reservation still
		// holds until its pods stop.
		{"reclaimed, pods stopping", &Queued{Queue: "team-b", Suspended: true, Workload: wl(
			metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"},
			metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: kueue.WorkloadEvictedByPreemption, Message: "Preempted to accommodate a workload (UID: u) due to reclamation within the cohort"},
			metav1.Condition{Type: kueue.WorkloadPreempted, Status: metav1.ConditionTrue, Reason: kueue.InCohortReclamationReason, Message: "Preempted to accommodate a workload (UID: u) due to reclamation within the cohort"})},
			false, CauseQueuePreempted, "Kueue preempted job/team-b/b3 (InCohortReclamation: Preempted to accommodate a workload (UID: u) due to reclamation within the cohort) and holds it suspended in LocalQueue team-b, giving back its quota as its pods stop", "queue.borrow: 0"},
		{"evicted", &Queued{Queue: "team-b", Suspended: true, Workload: wl(
			metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Deactivated", Message: "The workload is deactivated"},
			waiting("couldn't assign flavors"))},
			false, CauseQueuePreempted, "Kueue evicted job/team-b/b3 (Deactivated: The workload is deactivated)", "kubectl get workload job-b3-x"},
		{"no workload", &Queued{Queue: "team-b", Suspended: true}, false, CauseQueueWaiting, "Kueue has made no Workload", "berth-kueue"},
		{"position", &Queued{Queue: "team-b", Suspended: true, Workload: wl(waiting("couldn't assign flavors")),
			Position: &QueuePosition{InLocalQueue: 1, InClusterQueue: 3, Waiting: 3}},
			false, CauseQueueWaiting, "waits suspended in LocalQueue team-b (2nd of 3 waiting in the LocalQueue, 4th in its ClusterQueue), holding no quota", "Kueue's conditions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Workload{Kind: "Job", Namespace: "team-b", Name: "b3", Queued: tc.queued, Done: tc.done}
			c, ok := queueCause(w)
			if !ok {
				t.Fatal("no cause")
			}
			if c.Layer != LayerQueue || c.Code != tc.code || !strings.Contains(c.Message, tc.says) || !strings.Contains(c.Fix, tc.fix) {
				t.Errorf("got %s/%s %q (fix %q); want %s saying %q, fix with %q", c.Layer, c.Code, c.Message, c.Fix, tc.code, tc.says, tc.fix)
			}
		})
	}
	for name, w := range map[string]*Workload{
		"admitted": {Kind: "Job", Name: "b1", Queued: &Queued{Queue: "team-b", Suspended: false, Workload: wl()}},
		"finished": {Kind: "Job", Name: "b1", Done: true, Queued: &Queued{Queue: "team-b", Suspended: true, Workload: wl()}},
		"no queue": {Kind: "Job", Name: "b1"},
	} {
		if c, ok := queueCause(w); ok {
			t.Errorf("%s: cause %s %q; want none", name, c.Code, c.Message)
		}
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int32]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q; want %q", n, got, want)
		}
	}
}

// A Job Kueue holds is explained by Kueue alone: the namespace's
// ResourceQuotas (here a class's pods, 0 of 0) are not what it waits on,
// and are not shown beside it.
func TestQueuedJobShowsNoResourceQuota(t *testing.T) {
	s := &Snapshot{ResourceQuotas: []corev1.ResourceQuota{{
		ObjectMeta: metav1.ObjectMeta{Name: "team-classes", Namespace: "team-b"},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
			Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
		},
	}}}
	w := &Workload{Kind: "Job", Namespace: "team-b", Name: "b3", Desired: -1, Queued: &Queued{Queue: "team-b", Suspended: true}}
	v := ExplainWorkload(s, w)
	if v.Top.Code != CauseQueueWaiting || len(v.Quota) != 0 {
		t.Errorf("verdict %s with quota %+v; want %s and no ResourceQuota", v.Top.Code, v.Quota, CauseQueueWaiting)
	}
}
