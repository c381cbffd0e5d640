package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/status"
)

type statusOptions struct {
	Streams
	kube *kubeFlags
	file string
}

func newStatusCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &statusOptions{Streams: s, kube: kube}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show pools (nodes Ready/total, requested/allocatable CPU, memory, GPUs), team quotas and scaled workloads",
		Long: `Show the cluster of the current kubeconfig context against its blueprint.

The blueprint is -f FILE; else ./berth.yaml; else the one the cluster
recorded when berth up started it or berth apply applied it (any state
directory; with several, -f chooses). Pools the blueprint declares are listed even at zero nodes.
Workloads an HPA scales are listed last, one row per HPA: replicas now and
desired, the range, each metric against its target, the last rescale.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.Run(cmd.Context()) },
	}
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "blueprint to compare against")
	return cmd
}

func (o *statusOptions) Run(ctx context.Context) error {
	loader := o.kube.loader()
	raw, err := loader.RawConfig()
	if err != nil {
		return fmt.Errorf("reading kubeconfig: %w", err)
	}
	ctxName := raw.CurrentContext
	if o.kube.context != "" {
		ctxName = o.kube.context
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return problem.Errorf("start one with `berth up`, or pass --kubeconfig/--context", "no cluster to show: %w", err)
	}
	cfg.QPS, cfg.Burst = commandQPS, commandBurst
	client, err := protobufClient(cfg)
	if err != nil {
		return err
	}
	lb, err := clusterBlueprint(ctx, client, o.file, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		if errors.Is(err, errUnreachable) {
			return problem.Errorf("is it running? `berth up` starts a local one", "cluster %s (context %q) is unreachable: %w", cfg.Host, ctxName, err)
		}
		return err
	}
	var bp *v1alpha1.Blueprint
	name := "(no blueprint: pools from node labels)"
	if lb != nil {
		bp, name = lb.Blueprint, lb.Metadata.Name+" (from "+lb.source+")"
	}
	sum, err := status.Collect(ctx, client, listing.FromAPI(client), bp)
	if err != nil {
		return problem.Errorf("is it running? `berth up` starts a local one", "cluster %s (context %q) is unreachable: %w", cfg.Host, ctxName, err)
	}
	fmt.Fprintf(o.Out, "Cluster %s (context %s), blueprint %s\n\n", cfg.Host, ctxName, name)
	return status.Render(o.Out, sum)
}
