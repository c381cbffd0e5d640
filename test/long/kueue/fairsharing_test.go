//go:build long

package kueue_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"berth.io/berth/test/harness"
)

// Kueue's fair sharing, turned on by spec.fairSharing
// (testdata/fairsharing.yaml): team-x borrows both of the lender's idle
// GPUs; then team-y, which borrows nothing, needs one more than its own.
// Without fair sharing it would wait (it lent nothing, so it has nothing
// to reclaim); with it, Kueue preempts one of team-x's borrowed Jobs for
// team-y (InCohortFairSharing), leaving each team one GPU borrowed.
func TestKueueFairSharing(t *testing.T) {
	k, _ := startCluster(t, "testdata/fairsharing.yaml", "kfs")

	xs := []string{"x1", "x2", "x3"}
	for _, n := range xs {
		k.submit(t, job("team-x", n, "training", time.Hour))
	}
	harness.Eventually(t, 2*time.Minute, "team-x's three Jobs admitted, two on the lender's GPUs", func() (bool, error) {
		for _, n := range xs {
			if ok, err := k.admitted("team-x", n); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	k.submit(t, job("team-y", "y1", "training", time.Hour), job("team-y", "y2", "training", time.Hour))
	harness.Eventually(t, 2*time.Minute, "team-y's two Jobs admitted, one of team-x's preempted for fair sharing", func() (bool, error) {
		for _, n := range []string{"y1", "y2"} {
			if ok, err := k.admitted("team-y", n); !ok || err != nil {
				return false, err
			}
		}
		preempted, err := k.preempted(t, "team-x", xs, kueue.InCohortFairSharingReason)
		if err != nil {
			return false, err
		}
		return preempted == 1, nil
	})
	// The ClusterQueues' status follows the admissions a moment later.
	harness.Eventually(t, 30*time.Second, "team-x and team-y each borrowing 1 GPU", func() (bool, error) {
		for _, team := range []string{"team-x", "team-y"} {
			cq, err := k.kq.KueueV1beta2().ClusterQueues().Get(context.Background(), team, metav1.GetOptions{})
			if err != nil || borrowedGPUs(cq) != 1 {
				return false, err
			}
		}
		return true, nil
	})
}
