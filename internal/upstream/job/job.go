// Package job makes the upstream Job controller (k8s.io/kubernetes
// pkg/controller/job) on a clock of berth's choosing. Upstream builds it
// on the real clock through NewController, and on any clock through
// newControllerWithClock, which its tests use and which is unexported;
// NewController here reaches it by name (go:linkname). The controller is
// upstream's, but for the order in which its queue hands out Jobs due at
// the same instant (queue.go): its queues, backoffs, conditions and
// deadlines all read that clock.
package job

import (
	"context"
	_ "unsafe" // for go:linkname

	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1alpha2"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/utils/clock"
)

// NewController is upstream's Job controller on clk, its queue replaced
// by one that hands out Jobs due at the same instant in the order of
// their keys (newQueue says why). The workload and pod group informers
// are those of the WorkloadWithJob feature, off in berth's clusters: nil.
func NewController(ctx context.Context, client clientset.Interface, clk clock.WithTickerAndDelayedExecution, pods coreinformers.PodInformer, jobs batchinformers.JobInformer) (*job.Controller, error) {
	c, err := newControllerWithClock(ctx, client, clk, pods, jobs, nil, nil)
	if err != nil {
		return nil, err
	}
	if err := replaceQueue(c, newQueue(clk)); err != nil {
		return nil, err
	}
	return c, nil
}

// newControllerWithClock is k8s.io/kubernetes/pkg/controller/job's, with
// the same parameters (TestSignatureMatchesUpstream checks them).
//
//go:linkname newControllerWithClock k8s.io/kubernetes/pkg/controller/job.newControllerWithClock
func newControllerWithClock(ctx context.Context, kubeClient clientset.Interface, clock clock.WithTicker,
	podInformer coreinformers.PodInformer, jobInformer batchinformers.JobInformer,
	workloadInformer schedulinginformers.WorkloadInformer,
	podGroupInformer schedulinginformers.PodGroupInformer,
) (*job.Controller, error)
