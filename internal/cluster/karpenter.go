package cluster

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/karpenter"
	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/simtime"
)

// KarpenterOptions tune the Karpenter a cluster runs.
type KarpenterOptions struct {
	// Prices price its instance types. Nil means berth's shipped table.
	Prices *prices.Table
}

// startKarpenter runs Karpenter in place of the node autoscaler, for a
// blueprint whose provisioner it is: it installs Karpenter's CRDs, the
// node class and the exported NodePools, then runs Karpenter's
// controllers on the recorded blueprint's pools. installed closes once
// the NodePools are applied.
func (c *Cluster) startKarpenter(ctx context.Context, client kubernetes.Interface, blueprints *recorded.Store, bp *v1alpha1.Blueprint, opts KarpenterOptions, clk *simtime.Clock) {
	c.karpenterInstalled = make(chan struct{})
	name := bp.Metadata.Name
	c.run(ctx, "karpenter", func(ctx context.Context) error {
		if err := karpenter.Install(ctx, c.Config, bp); err != nil {
			return err
		}
		close(c.karpenterInstalled)
		return karpenter.Run(ctx, karpenter.Options{
			Config:    c.Config,
			Client:    client,
			Blueprint: func() (*v1alpha1.Blueprint, error) { return blueprints.Blueprint(name) },
			Prices:    opts.Prices,
			Clock:     karpenterClock(clk),
		})
	})
}

// waitKarpenter waits, where Karpenter provisions, for its NodePools to
// be applied: `berth up` is ready once Karpenter can launch nodes.
func (c *Cluster) waitKarpenter(ctx context.Context) error {
	if c.karpenterInstalled == nil {
		return nil
	}
	return c.waitFor(ctx, "Karpenter's NodePools", func(context.Context) (bool, error) {
		select {
		case <-c.karpenterInstalled:
			return true, nil
		default:
			return false, nil
		}
	})
}

// karpenterClock is the clock Karpenter keeps time by: the rehearsal's,
// or nil for the wall clock.
func karpenterClock(clk *simtime.Clock) clock.WithTickerAndDelayedExecution {
	if clk == nil {
		return nil
	}
	return clk
}
