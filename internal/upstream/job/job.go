// Package job makes the upstream Job controller (k8s.io/kubernetes
// pkg/controller/job) on a clock of berth's choosing. Upstream builds it
// on the real clock through NewController, and on any clock through
// newControllerWithClock, which its tests use and which is unexported;
// NewController here reaches it by name (go:linkname). The controller is
// upstream's, unchanged: its queues, backoffs, conditions and deadlines
// all read that clock.
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

// NewController is upstream's Job controller on clk. The workload and
// pod group informers are those of the WorkloadWithJob feature, off in
// berth's clusters: nil.
func NewController(ctx context.Context, client clientset.Interface, clk clock.WithTicker, pods coreinformers.PodInformer, jobs batchinformers.JobInformer) (*job.Controller, error) {
	return newControllerWithClock(ctx, client, clk, pods, jobs, nil, nil)
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
