package scheduler

// This file is berth's, not upstream's: the tie-break the patch
// (patch_test.go) gives Kueue's scheduler.

import (
	"strings"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// byKey orders two Workloads that tie on everything upstream orders a
// cycle's heads by (quota reserved, borrowing, DRS under fair sharing,
// priority, and their creation or eviction time, to the second) by
// namespace and name. Upstream leaves them in the order it gathered the
// heads in, ranging over a map of ClusterQueues, so two teams' Jobs
// submitted in the same second, competing for a cohort's one free slot,
// were admitted in either order from one run to the next; by name the
// trace decides.
func byKey(a, b *kueue.Workload) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
