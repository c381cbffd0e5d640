package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
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

The blueprint is -f FILE; for a local berth cluster without -f, the one it
was started from. Pools the blueprint declares are listed even at zero nodes.
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
	bp, err := o.blueprint(ctxName)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = commandQPS, commandBurst
	client, err := protobufClient(cfg)
	if err != nil {
		return err
	}
	sum, err := status.Collect(ctx, client, bp)
	if err != nil {
		return problem.Errorf("is it running? `berth up` starts a local one", "cluster %s (context %q) is unreachable: %w", cfg.Host, ctxName, err)
	}
	name := "(no blueprint: pools from node labels)"
	if bp != nil {
		name = bp.Metadata.Name
	}
	fmt.Fprintf(o.Out, "Cluster %s (context %s), blueprint %s\n\n", cfg.Host, ctxName, name)
	return status.Render(o.Out, sum)
}

// blueprint is -f, or the blueprint a local cluster was started from.
func (o *statusOptions) blueprint(ctxName string) (*v1alpha1.Blueprint, error) {
	file := o.file
	if file == "" {
		if local, ok := strings.CutPrefix(ctxName, "berth-"); ok {
			saved := filepath.Join(stateDirFor(local), "blueprint.yaml")
			if _, err := os.Stat(saved); err == nil {
				file = saved
			}
		}
	}
	if file == "" {
		return nil, nil
	}
	bp, warnings, err := blueprint.Load(file)
	for _, w := range warnings {
		fmt.Fprintln(o.ErrOut, w)
	}
	return bp, err
}
