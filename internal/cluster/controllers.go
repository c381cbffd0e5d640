package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler"
	"berth.io/berth/internal/budgets"
	"berth.io/berth/internal/controller"
	"berth.io/berth/internal/kubelets"
	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/slim"
	"berth.io/berth/internal/spot"
	"berth.io/berth/internal/storage"
)

// berthControllers lists berth's own controllers, the parts of a cloud and
// of the kubelet that a local cluster plays, in the order they register.
// A new one is a package with NewController(...), Reconcile(ctx, key) and
// Register(*controller.Manager) (or a loop of its own that Register adds),
// and a line here. Each takes the cluster-wide informers it watches from
// shared, and the recorded blueprints from blueprints, in NewController:
// both start once every controller has registered. blueprint names the
// blueprint the cluster was started from.
func berthControllers(client, kubeletClient kubernetes.Interface, agg aggregator.Interface, metrics *metricsServing, shared informers.SharedInformerFactory, blueprints *recorded.Store, scaler *autoscaler.Controller, blueprint string, drivers storage.Prepared, late storage.Late) []controller.Controller {
	ctls := []controller.Controller{
		// The kubelet's part KWOK leaves out: allocatable, and GPUs while
		// the device plugin the recorded blueprint names runs
		// (internal/kubelets).
		kubelets.NewController(kubeletClient, shared, blueprints),
		// The kubelets' node leases, renewed unless `berth node stop`
		// stopped the kubelet (internal/kubelets).
		kubelets.NewLeaseController(kubeletClient, shared),
		// The device plugin's DaemonSet `berth up` installed, kept as
		// the recorded blueprint says (internal/kubelets).
		kubelets.NewPluginController(client, blueprints, blueprint),
		// A PodDisruptionBudget per workload of a class with a budget.
		budgets.NewController(client, shared),
		// Spot interruptions: the notice carried out, and random ones
		// where a pool asks (internal/spot).
		spot.NewController(client, shared, blueprints),
		// The metrics APIs an HPA reads, from the simulated load
		// (internal/metricsapi).
		metricsapi.NewController(client, agg, metrics.server, metrics.caBundle, shared),
		// The simulated queues with an item time, drained as their
		// workers run (internal/metricsapi).
		metricsapi.NewQueueController(client, shared),
		// The storage classes' CSI drivers: a volume for each claim
		// (internal/storage); a driver first seen after start runs in a
		// process of its own (late).
		storage.NewController(client, shared, drivers, late),
	}
	if scaler != nil {
		// The node autoscaler, with cluster-autoscaler's semantics (made
		// by startControllers: Start has it scan once the nodes are
		// Ready, scanAutoscaler). Nil where Karpenter provisions
		// (startKarpenter).
		ctls = append(ctls, scaler)
	}
	return ctls
}

// startControllers registers berth's controllers, runs each as a
// component of the cluster, and starts the informers they share.
func (c *Cluster) startControllers(ctx context.Context, client kubernetes.Interface, opts *Options) error {
	agg, err := aggregator.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	// The simulated kubelets' client is not rate-limited, as KWOK's is
	// not: a real fleet has a client per kubelet, and 5,000 nodes renew
	// 500 leases a second, the whole of a shared client's 500 QPS.
	unthrottled := protobuf(c.Config)
	unthrottled.QPS, unthrottled.Burst = -1, 0
	kubeletClient, err := kubernetes.NewForConfig(unthrottled)
	if err != nil {
		return err
	}
	// The cluster-wide informers the controllers share, decoded and held
	// once for all of them: each pod informer is a copy of every pod.
	shared := slim.Informers(client, 10*time.Minute)
	// The blueprints recorded in the cluster, decoded once per change
	// for every controller that reads them.
	blueprints := recorded.NewStore(client)
	if opts.Blueprint.Spec.UsesKarpenter() {
		c.startKarpenter(ctx, client, blueprints, opts.Blueprint, opts.Karpenter, opts.Clock)
	} else {
		scaler := opts.autoscalerOptions()
		scaler.Informers, scaler.Blueprints = shared, blueprints
		c.autoscaler = autoscaler.NewController(client, scaler)
	}
	m := controller.NewManager(client, opts.clock())
	// A rehearsal's classes are all its blueprint's, made at start; a
	// driver's process of its own would keep the wall clock.
	var late storage.Late
	if opts.Clock == nil {
		late = c.runDriver
	}
	for _, ctl := range berthControllers(client, kubeletClient, agg, c.metrics, shared, blueprints, c.autoscaler, opts.Blueprint.Metadata.Name, c.storage, late) {
		if err := ctl.Register(m); err != nil {
			return err
		}
	}
	m.Each(func(name string, run func(context.Context) error) { c.run(ctx, name, run) })
	c.run(ctx, "informers", func(ctx context.Context) error {
		shared.Start(ctx.Done())
		blueprints.Start(ctx.Done())
		<-ctx.Done()
		shared.Shutdown()
		blueprints.Shutdown()
		m.Shutdown()
		return nil
	})
	return nil
}

// scanAutoscaler has the autoscaler scan once its caches see every pool
// node as Start leaves it: Ready, with its GPUs advertised where the
// device plugin runs. Its scans so far ran while the nodes registered and
// counted none of them, and `berth up` prints its status at ready.
func (c *Cluster) scanAutoscaler(ctx context.Context, bp *v1alpha1.Blueprint) error {
	if c.autoscaler == nil {
		return c.waitKarpenter(ctx)
	}
	plugin := kubelets.InstallsDevicePlugin(bp)
	settled := func(n *corev1.Node) bool {
		if !isReady(n) {
			return false
		}
		ok, _ := advertises(n)
		return ok || !plugin
	}
	if err := c.waitFor(ctx, "the autoscaler to see the nodes Ready", func(context.Context) (bool, error) {
		return c.autoscaler.Sees(c.Nodes, settled), nil
	}); err != nil {
		return err
	}
	if _, err := c.autoscaler.Scan(ctx); err != nil {
		return fmt.Errorf("the autoscaler's scan of the Ready nodes: %w", err)
	}
	return nil
}
