package cluster

import (
	"context"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"berth.io/berth/internal/autoscaler"
	"berth.io/berth/internal/budgets"
	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/slim"
	"berth.io/berth/internal/spot"
)

// controller is one of berth's in-process controllers: it watches the
// cluster through shared informers until ctx ends.
type controller struct {
	name string
	run  func(context.Context) error
}

// berthControllers lists berth's own controllers, the parts of a cloud and of
// the kubelet that a local cluster plays, in the order they start. A new
// one is a package with NewController(...) and Run(ctx) error, and a line
// here.
func berthControllers(client, kubelets kubernetes.Interface, agg aggregator.Interface, metrics *metricsServing, shared informers.SharedInformerFactory, blueprints *recorded.Store, opts *Options) []controller {
	scaler := opts.autoscalerOptions()
	scaler.Informers, scaler.Blueprints = shared, blueprints
	return []controller{
		// The kubelet's part KWOK leaves out: allocatable, and GPUs while
		// the device plugin runs (kubelet.go).
		{"kubelet", func(ctx context.Context) error { return runKubelet(ctx, kubelets, opts.Blueprint.Spec.DevicePlugin) }},
		// The kubelets' node leases, renewed unless `berth node stop`
		// stopped the kubelet (leases.go).
		{"leases", func(ctx context.Context) error { return runLeases(ctx, kubelets) }},
		// A PodDisruptionBudget per workload of a class with a budget.
		{"budgets", budgets.NewController(client).Run},
		// Spot interruptions: the notice carried out (internal/spot).
		{"spot", spot.NewController(client, shared, blueprints).Run},
		// The node autoscaler, with cluster-autoscaler's semantics.
		{"autoscaler", autoscaler.NewController(client, scaler).Run},
		// The metrics APIs an HPA reads, from the simulated load
		// (internal/metricsapi).
		{"metrics", metricsapi.NewController(client, agg, metrics.server, metrics.caBundle, shared).Run},
	}
}

// startControllers starts berth's controllers.
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
	kubelets, err := kubernetes.NewForConfig(unthrottled)
	if err != nil {
		return err
	}
	// The cluster-wide pods and nodes that the spot, autoscaler and
	// metrics controllers cache, decoded and held once for all three:
	// each informer is a copy of every pod. The controllers register
	// their informers as they are made, start the factory as they run,
	// and it stops with the cluster.
	shared := slim.Informers(client, 10*time.Minute)
	// The blueprints recorded in the cluster, decoded once per change
	// for every controller that reads them.
	blueprints := recorded.NewStore(client)
	for _, ctl := range berthControllers(client, kubelets, agg, c.metrics, shared, blueprints, opts) {
		c.run(ctx, ctl.name, ctl.run)
	}
	c.run(ctx, "informers", func(ctx context.Context) error {
		shared.Start(ctx.Done())
		blueprints.Start(ctx.Done())
		<-ctx.Done()
		shared.Shutdown()
		blueprints.Shutdown()
		return nil
	})
	return nil
}
