package cluster

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"

	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/upstream"
)

// runScheduler runs the stock kube-scheduler (default profile, every
// default plugin) against the cluster's kubeconfig. On a rehearsal's
// clock (clk non-nil) its queue keeps time by that clock (backoffs, the
// time a pod has been unschedulable) and stamps pods in the order it
// queues them (Sequenced), its flush of pods left unschedulable runs on
// it too (flushLeftovers), and the clock waits while pods are in its
// active or backoff queue or in flight.
func runScheduler(ctx context.Context, kubeconfig string, clk *simtime.Clock) error {
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		// The defaults (50 QPS) bind 50 pods a second at most; a
		// simulated cluster has no kubelets to protect and many pods.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-scheduler flags: %w", err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-scheduler feature gates: %w", err)
	}
	cc, sched, err := setupScheduler(ctx, opts, clk)
	if err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	if clk != nil {
		gateScheduler(ctx, sched, clk)
		go flushLeftovers(ctx, sched.SchedulingQueue, clk)
	}
	return app.Run(ctx, cc, sched)
}

// setupScheduler is app.Setup, which takes no clock, with the scheduler
// on clk where it is non-nil: the same defaulted configuration and the
// same options to scheduler.New.
func setupScheduler(ctx context.Context, opts *options.Options, clk *simtime.Clock) (*schedulerconfig.CompletedConfig, *scheduler.Scheduler, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, nil, err
	}
	if clk != nil {
		// Filter runs over the nodes on Parallelism goroutines, which
		// append the feasible ones in the order they finish, and Score
		// (without extenders) breaks a tie by that order; preemption's
		// dry run likewise. On one goroutine the order is the node
		// tree's, so the same state places a pod on the same node.
		cfg.Parallelism = 1
	}
	opts.ComponentConfig = cfg
	if errs := opts.Validate(); len(errs) > 0 {
		return nil, nil, utilerrors.NewAggregate(errs)
	}
	c, err := opts.Config(ctx)
	if err != nil {
		return nil, nil, err
	}
	if clk != nil {
		// Its clients as Config makes them, from a config whose requests
		// are counted from when they leave, as berth's own are.
		cfg := rest.CopyConfig(c.KubeConfig)
		cfg.Wrap(clk.Activity().Counter("requests sent by kube-scheduler").RoundTripper)
		simtime.NoThrottle(cfg)
		if c.Client, err = kubernetes.NewForConfig(rest.AddUserAgent(cfg, "scheduler")); err != nil {
			return nil, nil, err
		}
		eventClient, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		c.EventBroadcaster = events.NewEventBroadcasterAdapterWithContext(ctx, eventClient)
		c.InformerFactory = scheduler.NewInformerFactory(c.Client, 0)
		c.DynInformerFactory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, corev1.NamespaceAll, nil)
		c.KubeConfig = cfg
	}
	cc := c.Complete()
	recorders := func(name string) events.EventRecorderLogger { return cc.EventBroadcaster.NewRecorder(name) }
	schedOpts := []scheduler.Option{
		scheduler.WithComponentConfigVersion(cc.ComponentConfig.TypeMeta.APIVersion),
		scheduler.WithKubeConfig(cc.KubeConfig),
		scheduler.WithProfiles(cc.ComponentConfig.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cc.ComponentConfig.PercentageOfNodesToScore),
		scheduler.WithPodMaxBackoffSeconds(cc.ComponentConfig.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cc.ComponentConfig.PodInitialBackoffSeconds),
		scheduler.WithExtenders(cc.ComponentConfig.Extenders...),
		scheduler.WithParallelism(cc.ComponentConfig.Parallelism),
	}
	if clk == nil {
		schedOpts = append(schedOpts, scheduler.WithPodMaxInUnschedulablePodsDuration(cc.PodMaxInUnschedulablePodsDuration))
	} else {
		// The queue's own flush of pods left unschedulable ticks on the
		// wall clock; flushLeftovers does it on the rehearsal's, and
		// the queue's never finds a pod old enough.
		schedOpts = append(schedOpts, scheduler.WithClock(clk.Sequenced()), scheduler.WithPodMaxInUnschedulablePodsDuration(time.Duration(math.MaxInt64)))
	}
	sched, err := scheduler.New(ctx, cc.Client, cc.InformerFactory, cc.DynInformerFactory, profile.RecorderFactory(recorders), schedOpts...)
	if err != nil {
		return nil, nil, err
	}
	return &cc, sched, nil
}

// gateScheduler has the scheduler take its pods through a gate of the
// rehearsal's clock: one pod at a time, each once the rest of the cluster
// has settled (simtime.Gate), so that where a pod lands depends on the
// moment's state and the queue's order, never on how far the machine had
// got with the moment's other work. The clock waits while a pod is in
// flight: in its scheduling cycle, or assumed onto its node and not yet
// seen bound (its binding cycle, PreBind included).
func gateScheduler(ctx context.Context, sched *scheduler.Scheduler, clk *simtime.Clock) {
	q := sched.SchedulingQueue
	gate := clk.Activity().Gate("the scheduler's queue", func() bool {
		return len(q.PodsInActiveQ()) > 0 || len(q.PodsInBackoffQ()) > 0
	})
	clk.Activity().Probe("the scheduler's pods in flight", func() bool { return len(q.InFlightPods()) > 0 })
	// The queue lets a pod go (Done) before PreBind, where VolumeBinding
	// waits, polling each wall second, for a WaitForFirstConsumer claim
	// to bind: the assumed pods are what is in flight from there on.
	assumed := &assumedPods{Cache: sched.Cache, uids: map[types.UID]bool{}}
	sched.Cache = assumed
	clk.Activity().Probe("the scheduler's pods binding", assumed.any)
	pop := sched.NextPod
	sched.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		if !gate.Wait(ctx) {
			return nil, ctx.Err()
		}
		return pop(logger)
	}
}

// assumedPods is the scheduler's cache, counting the pods it holds
// assumed: placed by a scheduling cycle and not yet confirmed by the pod
// informer's bound pod (or forgotten when binding failed).
type assumedPods struct {
	internalcache.Cache
	mu   sync.Mutex
	uids map[types.UID]bool
}

func (a *assumedPods) AssumePod(logger klog.Logger, pod *corev1.Pod) error {
	err := a.Cache.AssumePod(logger, pod)
	if err == nil {
		a.mu.Lock()
		a.uids[pod.UID] = true
		a.mu.Unlock()
	}
	return err
}

func (a *assumedPods) ForgetPod(logger klog.Logger, pod *corev1.Pod) error {
	a.done(pod)
	return a.Cache.ForgetPod(logger, pod)
}

func (a *assumedPods) AddPod(logger klog.Logger, pod *corev1.Pod) error {
	err := a.Cache.AddPod(logger, pod)
	a.done(pod)
	return err
}

func (a *assumedPods) RemovePod(logger klog.Logger, pod *corev1.Pod) error {
	a.done(pod)
	return a.Cache.RemovePod(logger, pod)
}

func (a *assumedPods) done(pod *corev1.Pod) {
	a.mu.Lock()
	delete(a.uids, pod.UID)
	a.mu.Unlock()
}

func (a *assumedPods) any() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.uids) > 0
}

// flushLeftovers does on a rehearsal's clock what the scheduler's queue
// does every upstream.UnschedulableFlushPeriod of wall time
// (PriorityQueue.Run's flushUnschedulablePodsLeftover, whose ticker takes
// no clock): it sends the pods that have stayed unschedulable longer than
// DefaultPodMaxInUnschedulablePodsDuration back to be tried, through the
// queue's own MoveAllToActiveOrBackoffQueue with the queue's own event.
// It runs in the autoscaler's phase, last in its moment.
func flushLeftovers(ctx context.Context, q internalqueue.SchedulingQueue, clk *simtime.Clock) {
	logger := klog.FromContext(ctx)
	late := clk.Phase(simtime.PhaseAutoscaler)
	for {
		select {
		case <-ctx.Done():
			return
		case <-late.After(upstream.UnschedulableFlushPeriod):
		}
		now := clk.Now()
		old := map[string]bool{}
		for _, p := range q.UnschedulablePods() {
			if info, ok := q.GetPod(p.Name, p.Namespace); ok && now.Sub(info.Timestamp) > internalqueue.DefaultPodMaxInUnschedulablePodsDuration {
				old[p.Namespace+"/"+p.Name] = true
			}
		}
		if len(old) > 0 {
			q.MoveAllToActiveOrBackoffQueue(logger, framework.EventUnschedulableTimeout, nil, nil, func(p *corev1.Pod) bool {
				return old[p.Namespace+"/"+p.Name]
			})
		}
	}
}
