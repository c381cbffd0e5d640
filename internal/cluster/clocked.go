package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	kcmconfig "k8s.io/kubernetes/pkg/controller/apis/config"
	"k8s.io/kubernetes/pkg/controller/disruption"
	"k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"

	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/upstream"
	"berth.io/berth/internal/upstream/job"
	"berth.io/berth/internal/upstream/podautoscaler"
)

// runClockedControllers runs, on a rehearsal's clock, the controllers
// whose timing decides what a rehearsal measures and which
// kube-controller-manager builds on the wall clock:
//
//   - the Job controller (its backoffs before retrying a Job the quota
//     refused and before replacing a failed pod, its conditions and
//     deadlines), upstream's, built through the constructor that takes a
//     clock (internal/upstream/job); its timers fire in a later phase
//     of their moment (simtime.PhaseJobs), so that a retry sees the
//     quota the moment's ended pods gave back, whichever way the
//     machine ordered them;
//   - the disruption controller (PodDisruptionBudget status), upstream's,
//     built through its exported constructor that takes a clock;
//   - the HPA controller (its sync period, stabilization windows and
//     scaling policies' periods), upstream's with berth's patch that has
//     it read the time from a clock (internal/upstream/podautoscaler); its
//     syncs come in a later phase of their moment (simtime.PhaseHPA), so
//     that they see the pods that moment made.
//
// Each is configured as kube-controller-manager configures it, from cc,
// the manager's own defaulted configuration. The Job and disruption
// controllers run one worker where the manager runs several: on a
// virtual clock a reconcile takes no trace time, and one worker makes a
// moment's pods in the order their Jobs changed, the same every run.
func runClockedControllers(ctx context.Context, cfg *rest.Config, cc *kcmconfig.KubeControllerManagerConfiguration, clk *simtime.Clock) error {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kube-controller-manager/berth-clocked " + simtime.OnClockAgent
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	// As kube-controller-manager does: the mapper learns of new kinds
	// (custom resources) at most 30 s late.
	go wait.Until(mapper.Reset, 30*time.Second, ctx.Done())
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(client.Discovery()))
	if err != nil {
		return fmt.Errorf("the scale client: %w", err)
	}

	jobs, err := job.NewController(ctx, client, clk.Phase(simtime.PhaseJobs), factory.Core().V1().Pods(), factory.Batch().V1().Jobs())
	if err != nil {
		return fmt.Errorf("the Job controller: %w", err)
	}
	budgets := disruption.NewDisruptionControllerInternal(ctx,
		factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets(), factory.Core().V1().ReplicationControllers(),
		factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments(), factory.Apps().V1().StatefulSets(),
		client, mapper, scales, client.Discovery(), clk, upstream.StalePodDisruptionTimeout)

	resources, err := resourceclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	external, err := external_metrics.NewForConfig(cfg)
	if err != nil {
		return err
	}
	apiVersions := custom_metrics.NewAvailableAPIsGetter(client.Discovery())
	metricsClient := metrics.NewRESTMetricsClient(resources, custom_metrics.NewForConfig(cfg, mapper, apiVersions), external)
	hpa := cc.HPAController
	autoscalers := podautoscaler.NewHorizontalController(ctx, client.CoreV1(), scales, client.AutoscalingV2(), mapper, metricsClient,
		factory.Autoscaling().V2().HorizontalPodAutoscalers(), factory.Core().V1().Pods(),
		hpa.HorizontalPodAutoscalerSyncPeriod.Duration, hpa.HorizontalPodAutoscalerDownscaleStabilizationWindow.Duration,
		hpa.HorizontalPodAutoscalerTolerance, hpa.HorizontalPodAutoscalerCPUInitializationPeriod.Duration,
		hpa.HorizontalPodAutoscalerInitialReadinessDelay.Duration, clk.Phase(simtime.PhaseHPA))

	factory.Start(ctx.Done())
	defer factory.Shutdown()
	go jobs.Run(ctx, 1)
	go budgets.Run(ctx)
	go custom_metrics.PeriodicallyInvalidate(apiVersions, hpa.HorizontalPodAutoscalerSyncPeriod.Duration, ctx.Done())
	// Each HPA scales a workload of its own: their syncs run side by
	// side, as many as the manager runs.
	go autoscalers.Run(ctx, int(hpa.ConcurrentHorizontalPodAutoscalerSyncs))
	<-ctx.Done()
	return nil
}
