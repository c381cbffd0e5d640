package karpenter

import (
	"context"
	"flag"
	"fmt"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/nodeoverlay"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/logging"
	"sigs.k8s.io/karpenter/pkg/operator/options"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/crclock"
	"berth.io/berth/internal/prices"
)

// Options says what Run runs Karpenter on.
type Options struct {
	// Config reaches the cluster's API server. Required.
	Config *rest.Config
	// Client is the cluster's client for the cloud provider. Required.
	Client kubernetes.Interface
	// Blueprint returns the recorded blueprint whose pools are the
	// instance types. Required.
	Blueprint func() (*v1alpha1.Blueprint, error)
	// Prices prices the pools. Nil means the table berth ships.
	Prices *prices.Table
	// Clock is the cluster's clock: a rehearsal's virtual clock, or nil
	// for the wall clock. Karpenter's controllers keep time by it (its
	// conditions, batch windows, consolidation checks and the delays of
	// its controllers' queues), and so does the cloud provider's
	// provisioning time.
	Clock clock.WithTickerAndDelayedExecution
}

// setLoggerOnce sets controller-runtime's process-wide logger, once per
// process (a process may start Karpenter for more than one cluster).
var setLoggerOnce sync.Once

// Run runs Karpenter's controllers until ctx ends, as Karpenter's
// operator (pkg/operator) runs them, but: its options come from
// berth (Karpenter's defaults, with leader election off),
// never from os.Args; its client from opts.Config; its logs go to
// berth's logger (klog's, from ctx) rather than replacing the process's;
// and it binds no port (metrics and health probes off). The cluster
// must have Karpenter's CRDs (Install).
func Run(ctx context.Context, opts Options) error {
	o, err := karpenterOptions()
	if err != nil {
		return err
	}
	table := opts.Prices
	if table == nil {
		table = prices.Shipped()
	}
	logger := klog.FromContext(ctx).WithName("karpenter")
	ctx = log.IntoContext(options.ToContext(ctx, o), logger)
	// controller-runtime's own loggers (its informers') go to the same
	// place; left unset, it prints a stack trace to stderr after 30 s.
	setLoggerOnce.Do(func() { log.SetLogger(logger) })

	cfg := rest.CopyConfig(opts.Config)
	cfg.QPS, cfg.Burst = float32(o.KubeClientQPS), o.KubeClientBurst
	cfg.UserAgent = "karpenter/berth"
	skipNameValidation := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Logger:                 logging.IgnoreDebugEvents(logger),
		LeaderElection:         false,
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		BaseContext:            func() context.Context { return ctx },
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				&coordinationv1.Lease{}: {Field: fields.SelectorFromSet(fields.Set{"metadata.namespace": corev1.NamespaceNodeLease})},
			},
		},
		// Controller names are unique per process in controller-runtime;
		// a process that starts a second cluster starts them again. On a
		// rehearsal's clock the queues are client-go's rate-limited ones,
		// on that clock (crclock.Manager), not controller-runtime's
		// priority queue, which ticks on the wall clock.
		Controller: ctrlconfig.Controller{SkipNameValidation: &skipNameValidation, UsePriorityQueue: ptr.To(opts.Clock == nil)},
	})
	if err != nil {
		return fmt.Errorf("making Karpenter's manager: %w", err)
	}
	if err := indexFields(ctx, mgr); err != nil {
		return err
	}
	var clk clock.WithTickerAndDelayedExecution = clock.RealClock{}
	if opts.Clock != nil {
		clk = opts.Clock
		// The queues of the controllers registered through mgr count
		// their delays (every RequeueAfter: the disruption controller's
		// polling period) on clk.
		mgr = crclock.Manager(mgr, clk)
	}
	store := nodeoverlay.NewInstanceTypeStore()
	provider := NewCloudProvider(ctx, opts.Client, opts.Blueprint, table, clk)
	decorated := overlay.Decorate(provider, mgr.GetClient(), store)
	cluster := state.NewCluster(clk, mgr.GetClient(), decorated)
	recorder := events.NewRecorder(mgr.GetEventRecorderFor("karpenter")) //nolint:staticcheck // Karpenter's recorder takes the old interface
	for _, c := range controllers.NewControllers(ctx, mgr, clk, mgr.GetClient(), recorder, decorated, provider, cluster, store) {
		if err := c.Register(ctx, mgr); err != nil {
			return fmt.Errorf("registering Karpenter's controllers: %w", err)
		}
	}
	return mgr.Start(ctx)
}

// karpenterOptions are Karpenter's options: its own defaults (its flags'
// defaults, as its binary has them with no flags and no environment
// variables set), with berth's settings on top.
func karpenterOptions() (*options.Options, error) {
	o := &options.Options{}
	fs := &options.FlagSet{FlagSet: flag.NewFlagSet("karpenter", flag.ContinueOnError)}
	o.AddFlags(fs)
	if err := o.Parse(fs, "--disable-leader-election=true", "--log-level=info"); err != nil {
		return nil, fmt.Errorf("karpenter's options: %w", err)
	}
	return o, nil
}

// indexFields adds the field indexes Karpenter's controllers look
// objects up by, as its operator does (pkg/operator's setupIndexers).
func indexFields(ctx context.Context, mgr manager.Manager) error {
	idx := mgr.GetFieldIndexer()
	for _, f := range []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }},
		{&corev1.Node{}, "spec.providerID", func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }},
		{&storagev1.VolumeAttachment{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*storagev1.VolumeAttachment).Spec.NodeName} }},
		{&karpv1.NodeClaim{}, "status.providerID", func(o client.Object) []string { return []string{o.(*karpv1.NodeClaim).Status.ProviderID} }},
		{&karpv1.NodeClaim{}, "spec.nodeClassRef.group", func(o client.Object) []string { return []string{o.(*karpv1.NodeClaim).Spec.NodeClassRef.Group} }},
		{&karpv1.NodeClaim{}, "spec.nodeClassRef.kind", func(o client.Object) []string { return []string{o.(*karpv1.NodeClaim).Spec.NodeClassRef.Kind} }},
		{&karpv1.NodeClaim{}, "spec.nodeClassRef.name", func(o client.Object) []string { return []string{o.(*karpv1.NodeClaim).Spec.NodeClassRef.Name} }},
		{&karpv1.NodePool{}, "spec.template.spec.nodeClassRef.group", func(o client.Object) []string {
			return []string{o.(*karpv1.NodePool).Spec.Template.Spec.NodeClassRef.Group}
		}},
		{&karpv1.NodePool{}, "spec.template.spec.nodeClassRef.kind", func(o client.Object) []string {
			return []string{o.(*karpv1.NodePool).Spec.Template.Spec.NodeClassRef.Kind}
		}},
		{&karpv1.NodePool{}, "spec.template.spec.nodeClassRef.name", func(o client.Object) []string {
			return []string{o.(*karpv1.NodePool).Spec.Template.Spec.NodeClassRef.Name}
		}},
	} {
		if err := idx.IndexField(ctx, f.obj, f.field, f.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", f.obj, f.field, err)
		}
	}
	return nil
}
