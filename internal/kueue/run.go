package kueue

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	componentconfig "k8s.io/component-base/config/v1alpha1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	configapiv1beta1 "sigs.k8s.io/kueue/apis/config/v1beta1"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueuealpha "sigs.k8s.io/kueue/apis/kueue/v1alpha1"
	kueuev1beta1 "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/constants"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/failurerecovery"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/tas"
	tasindexer "sigs.k8s.io/kueue/pkg/controller/tas/indexer"
	"sigs.k8s.io/kueue/pkg/features"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption/fairsharing"
	"sigs.k8s.io/kueue/pkg/util/kubeversion"
	"sigs.k8s.io/kueue/pkg/webhooks"

	// The Job integration (batch/job), the one berth enables.
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/job"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/crclock"
	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/upstream/kueue/scheduler"
)

// Options says what Run runs Kueue on.
type Options struct {
	// Config reaches the cluster's API server. Required.
	Config *rest.Config
	// Serving is the webhook server's certificate, for 127.0.0.1, and
	// CABundle the CA that signed it, which the API server trusts.
	Serving  tls.Certificate
	CABundle []byte
	// FairSharing turns on Kueue's fair sharing (the blueprint's
	// spec.fairSharing).
	FairSharing bool
	// Ready, if set, is called once the webhooks are registered and
	// Kueue's caches have synced: Jobs submitted from then on are
	// Kueue's.
	Ready func()
	// Visibility, when set, is where Kueue's visibility API is served
	// (the pending Workloads of a queue and their positions).
	Visibility *Visibility
	// Clock, when set, is a rehearsal's clock this process follows
	// (simtime.Follow): Kueue's queues, scheduler and Job reconcilers
	// keep time on it, its requests are counted in its Activity, and
	// its watches are named for the owner's API server to count.
	Clock *simtime.Clock
}

// scheme is what Kueue's manager reads and writes: client-go's kinds,
// Kueue's, and its integrations' (cmd/kueue's init).
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(schedulingv1.AddToScheme(s))
	utilruntime.Must(resourceapi.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	utilruntime.Must(kueuev1beta1.AddToScheme(s))
	utilruntime.Must(kueuealpha.AddToScheme(s))
	utilruntime.Must(configapiv1beta1.AddToScheme(s))
	utilruntime.Must(configapi.AddToScheme(s))
	utilruntime.Must(jobframework.ForEachIntegration(func(_ string, cb jobframework.IntegrationCallbacks) error {
		if cb.AddToScheme != nil {
			return cb.AddToScheme(s)
		}
		return nil
	}))
	return s
}()

// Configuration is the Kueue configuration berth runs: Kueue's defaults
// (what its binary has with no --config), but leader election and the
// internal certificate management off (one replica; berth issues the
// webhook's certificate), and the Job integration alone. Jobs without a
// queue are not Kueue's (manageJobsWithoutQueueName false, the default).
// fairSharing turns on Kueue's fair sharing.
func Configuration(fairSharing bool) *configapi.Configuration {
	cfg := &configapi.Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: configapi.GroupVersion.String(), Kind: "Configuration"},
		ControllerManager: configapi.ControllerManager{
			LeaderElection: &componentconfig.LeaderElectionConfiguration{LeaderElect: ptr.To(false)},
		},
		InternalCertManagement: &configapi.InternalCertManagement{Enable: ptr.To(false)},
		Integrations:           &configapi.Integrations{Frameworks: []string{"batch/job"}},
	}
	if fairSharing {
		// The strategies Kueue's older configuration API defaulted to
		// (config/v1beta1's conversion); v1beta2 asks for them.
		cfg.FairSharing = &configapi.FairSharing{PreemptionStrategies: []configapi.PreemptionStrategy{
			configapi.LessThanOrEqualToFinalShare, configapi.LessThanInitialShare}}
	}
	return cfg
}

// load has Kueue read cfg as its binary reads its --config file
// (config.Load: defaults, validation, and the manager options it
// derives).
func load(cfg *configapi.Configuration) (ctrl.Options, configapi.Configuration, error) {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return ctrl.Options{}, configapi.Configuration{}, err
	}
	dir, err := os.MkdirTemp("", "berth-kueue-")
	if err != nil {
		return ctrl.Options{}, configapi.Configuration{}, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return ctrl.Options{}, configapi.Configuration{}, err
	}
	opts, loaded, err := config.Load(scheme, file)
	if err != nil {
		return ctrl.Options{}, configapi.Configuration{}, fmt.Errorf("Kueue's configuration: %w", err)
	}
	return opts, loaded, nil
}

// setLoggerOnce sets controller-runtime's process-wide logger once.
var setLoggerOnce sync.Once

// Run installs Kueue's CRDs, runs its controllers, scheduler and webhooks
// until ctx ends, as cmd/kueue's main wires them (the core controllers,
// the Job integration, and failure recovery and topology-aware
// scheduling where Kueue's feature gates turn them on: TAS is on by
// default), registers the webhooks once their server answers, and serves
// the visibility API where opts.Visibility says (VisibilityOnDemand, on
// by default). Left out of main's wiring: the internal certificate
// management (off), the metrics and health servers, MultiKueue (no other
// clusters), the ProvisioningRequest admission check (no such API on a
// local cluster, which main skips too), elastic jobs (off by default)
// and the signal-driven cache dumper.
func Run(ctx context.Context, opts Options) error {
	logger := klog.FromContext(ctx).WithName("kueue")
	ctx = log.IntoContext(ctx, logger)
	setLoggerOnce.Do(func() { log.SetLogger(logger) })

	// The API server may still be warming up (its post-start hooks, its
	// discovery): what fails now is tried again for a minute.
	if err := retryFor(ctx, time.Minute, func() error { return installCRDs(ctx, opts.Config) }); err != nil {
		return err
	}
	options, cfg, err := load(Configuration(opts.FairSharing))
	if err != nil {
		return err
	}
	srv, err := newLoopbackServer(opts.Serving)
	if err != nil {
		return fmt.Errorf("listening for Kueue's webhooks: %w", err)
	}
	options.WebhookServer = srv
	options.Metrics = server.Options{BindAddress: "0"}
	options.HealthProbeBindAddress = "0"
	options.PprofBindAddress = ""
	options.Logger = logger
	options.BaseContext = func() context.Context { return ctx }
	// Controller names are unique per process in controller-runtime; a
	// process that starts a second cluster starts them again.
	// On a rehearsal's clock the queues are client-go's rate-limited
	// ones on that clock (crclock.Manager), not controller-runtime's
	// priority queue, which ticks on the wall clock.
	options.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(opts.Clock == nil)}

	kubeConfig := rest.CopyConfig(opts.Config)
	kubeConfig.UserAgent = "kueue/berth"
	if opts.Clock != nil {
		// Its requests are work the rehearsal's clock waits for from
		// when they leave, and it retries a refusal on that clock.
		sent := opts.Clock.Activity().Counter("requests sent by Kueue")
		kubeConfig.Wrap(sent.RoundTripper)
		kubeConfig.UserAgent += " " + simtime.OnClockAgent
		simtime.NoThrottle(kubeConfig)
		opts.Clock.Activity().Follows(v1alpha1.KueueClockFollower)
		options.NewCache = countReads(options.NewCache, opts.Clock.Activity().Counter("Kueue's reads of its cache (an informer started on first use)"))
	}
	var mgr ctrl.Manager
	mgr, err = ctrl.NewManager(kubeConfig, options)
	if err != nil {
		return fmt.Errorf("making Kueue's manager: %w", err)
	}
	var clk clock.WithTickerAndDelayedExecution = clock.RealClock{}
	var schedOptions []scheduler.Option
	if opts.Clock != nil {
		clk = opts.Clock
		mgr = crclock.Manager(mgr, clk)
		// Kueue takes its scheduler's clock through an option meant
		// for its tests, whose testing.TB it does not use.
		schedOptions = append(schedOptions, scheduler.WithClock(nil, clk))
	}

	var cacheOptions []schdcache.Option
	queueOptions := []qcache.Option{qcache.WithClock(clk)}
	if cfg.FairSharing != nil {
		cacheOptions = append(cacheOptions, schdcache.WithFairSharing(fairsharing.Enabled(cfg.FairSharing)))
	}
	if cfg.AdmissionFairSharing != nil {
		queueOptions = append(queueOptions, qcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
		cacheOptions = append(cacheOptions, schdcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	}
	cCache := schdcache.New(mgr.GetClient(), cacheOptions...)
	var requeuerOptions []qcache.RequeuerOption
	if opts.Clock != nil {
		// Kueue batches the requeue of a queue's inadmissible workloads
		// (when quota frees up) for a second, on a delaying queue of
		// the wall clock it gives no way to replace: a rehearsal's
		// clock would move on while it waits, and the quota freed at
		// one moment would be offered at whatever moment the wall
		// second ended in. On the clock the batch is empty, and the
		// requeue comes at the same moment: within the rehearsal's
		// one-second step of when Kueue would make it.
		requeuerOptions = append(requeuerOptions, qcache.WithBatchPeriod(0))
	}
	requeuer := qcache.NewRequeuer(requeuerOptions...)
	if err := mgr.Add(requeuer); err != nil {
		return err
	}
	preemptionExpectations := preemptexpectations.New()
	queueOptions = append(queueOptions, qcache.WithPreemptionExpectations(preemptionExpectations))
	queues := qcache.NewManager(mgr.GetClient(), cCache, requeuer, queueOptions...)

	if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("Kueue's indexes: %w", err)
	}
	if features.Enabled(features.TopologyAwareScheduling) {
		if err := tasindexer.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return fmt.Errorf("Kueue's topology indexes: %w", err)
		}
	}
	if err := jobframework.SetupIndexes(ctx, mgr.GetFieldIndexer(), jobframework.WithEnabledFrameworks(cfg.Integrations.Frameworks)); err != nil {
		return fmt.Errorf("Kueue's job indexes: %w", err)
	}

	dc, err := discovery.NewDiscoveryClientForConfig(kubeConfig)
	if err != nil {
		return err
	}
	versions := kubeversion.NewServerVersionFetcher(dc)
	if err := mgr.Add(versions); err != nil {
		return err
	}
	if err := retryFor(ctx, time.Minute, versions.FetchServerVersion); err != nil {
		return fmt.Errorf("Kueue reading the API server's version: %w", err)
	}

	if name, err := core.SetupControllers(mgr, queues, cCache, &cfg, nil, preemptionExpectations, nil); err != nil {
		return fmt.Errorf("Kueue's controller %s: %w", name, err)
	}
	if features.Enabled(features.FailureRecoveryPolicy) {
		if name, err := failurerecovery.SetupControllers(mgr, &cfg, nil); err != nil {
			return fmt.Errorf("Kueue's failure recovery controller %s: %w", name, err)
		}
	}
	if features.Enabled(features.TopologyAwareScheduling) {
		if name, err := tas.SetupControllers(mgr, queues, cCache, &cfg, nil); err != nil {
			return fmt.Errorf("Kueue's topology controller %s: %w", name, err)
		}
	}
	nsSelector, err := metav1.LabelSelectorAsSelector(cfg.ManagedJobsNamespaceSelector)
	if err != nil {
		return fmt.Errorf("Kueue's managedJobsNamespaceSelector: %w", err)
	}
	if err := jobframework.SetupControllers(ctx, mgr, logger,
		jobframework.WithManageJobsWithoutQueueName(cfg.ManageJobsWithoutQueueName),
		jobframework.WithWaitForPodsReady(cfg.WaitForPodsReady),
		jobframework.WithKubeServerVersion(versions),
		jobframework.WithEnabledFrameworks(cfg.Integrations.Frameworks),
		jobframework.WithEnabledExternalFrameworks(cfg.Integrations.ExternalFrameworks),
		jobframework.WithManagerName(constants.KueueName),
		jobframework.WithLabelKeysToCopy(cfg.Integrations.LabelKeysToCopy),
		jobframework.WithCache(cCache),
		jobframework.WithQueues(queues),
		jobframework.WithObjectRetentionPolicies(cfg.ObjectRetentionPolicies),
		jobframework.WithManagedJobsNamespaceSelector(nsSelector),
		jobframework.WithClock(clk),
	); err != nil {
		return fmt.Errorf("Kueue's job controllers: %w", err)
	}
	if name, err := webhooks.Setup(mgr, nil); err != nil {
		return fmt.Errorf("Kueue's webhook %s: %w", name, err)
	}
	go queues.CleanUpOnContext(ctx)
	go cCache.CleanUpOnContext(ctx)

	// Kueue's scheduler with one change, on and off the clock: Workloads
	// that tie on everything it orders by are taken by namespace and name,
	// not in a map's order (internal/upstream/kueue/scheduler).
	sched := scheduler.New(queues, cCache, mgr.GetClient(), mgr.GetEventRecorderFor(constants.AdmissionName), //nolint:staticcheck // Kueue's scheduler takes the old recorder
		append(schedOptions,
			scheduler.WithFairSharing(cfg.FairSharing),
			scheduler.WithAdmissionFairSharing(cfg.AdmissionFairSharing),
			scheduler.WithPreemptionExpectations(preemptionExpectations),
		)...,
	)
	if err := mgr.Add(sched); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- mgr.Start(ctx) }()
	select {
	case err := <-errs:
		return fmt.Errorf("Kueue's manager: %w", err)
	case <-srv.Started():
	}
	if err := registerWebhooks(ctx, opts.Config, srv, opts.CABundle); err != nil {
		return err
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return <-errs
	}
	if opts.Visibility != nil {
		go func() {
			if err := serveVisibility(ctx, opts.Visibility, queues, opts.Config); err != nil {
				errs <- err
			}
		}()
		if err := registerVisibility(ctx, opts.Config, opts.CABundle, opts.Visibility.Listener.Addr().String()); err != nil {
			return err
		}
	}
	if opts.Ready != nil {
		opts.Ready()
	}
	return <-errs
}

// retryFor calls f until it succeeds, ctx ends or d passes; it returns
// f's last error.
func retryFor(ctx context.Context, d time.Duration, f func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, d, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	})
	if last != nil {
		return last
	}
	return err
}
