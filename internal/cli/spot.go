package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/kubelets"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/spot"
)

type spotOptions struct {
	Streams
	kube   *kubeFlags
	sel    kubelets.Selection
	count  int
	notice time.Duration
	seed   uint64
}

func newSpotCommand(s Streams, kube *kubeFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "spot", Short: "Take spot capacity away on a local cluster, as the clouds do"}
	o := &spotOptions{Streams: s, kube: kube}
	interrupt := &cobra.Command{
		Use:   "interrupt [NODE...] [--pool POOL [--count N]] [--notice D]",
		Short: "Interrupt spot nodes with notice",
		Long: `Interrupt spot nodes as the clouds reclaim spot capacity: the node is
tainted ` + spot.TaintKey + `:NoSchedule; its pods get the DisruptionTarget
condition (TerminationByKubelet) and fail once their grace period, never longer
than the notice, has passed; the node is deleted when the notice ends. The
notice is 30 s by default, as on Azure and Google Cloud (AWS gives 2 minutes).
Pods that then wait for capacity are the autoscaler's to place.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.sel.Names = args
			return o.Run(cmd.Context())
		},
	}
	f := interrupt.Flags()
	f.StringVar(&o.sel.Pool, "pool", "", "interrupt nodes of this pool")
	f.StringVar(&o.sel.Zone, "zone", "", "interrupt nodes in this zone")
	f.IntVar(&o.count, "count", 0, "interrupt this many of the selected nodes, picked at random (default: all)")
	f.DurationVar(&o.notice, "notice", spot.DefaultNotice, "the interruption notice")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the random pick, for repeatable rehearsals (default: from the clock)")
	cmd.AddCommand(interrupt)
	return cmd
}

func (o *spotOptions) Run(ctx context.Context) error {
	if o.notice <= 0 {
		return fmt.Errorf("--notice %s: a notice must be positive\nfix: e.g. --notice 30s (Azure, Google Cloud) or --notice 2m (AWS)", o.notice)
	}
	t, err := o.kube.connect(ctx)
	if err != nil {
		return err
	}
	c := t.client.Kube
	if local, err := pools.IsLocal(ctx, c); err != nil {
		return err
	} else if !local {
		return fmt.Errorf("%s is not a berth local cluster: its spot capacity is the cloud's\nfix: point --context at a cluster `berth up` started", t)
	}
	nodes, err := kubelets.Select(ctx, c, o.sel)
	if err != nil {
		return err
	}
	nodes = spot.Pick(nodes, o.count, o.seed)
	if len(nodes) == 0 {
		return fmt.Errorf("every selected node is being interrupted already\nfix: wait for them to go, or select others")
	}
	if err := spot.Interrupt(ctx, c, nodes, o.notice, time.Now()); err != nil {
		return err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	fmt.Fprintf(o.Out, "Interrupted %d spot node(s): %s (notice %s)\n", len(nodes), strings.Join(names, ", "), o.notice)
	fmt.Fprintf(o.Out, "  Tainted %s:NoSchedule; their pods get DisruptionTarget and end within the notice;\n  the nodes are deleted in %s. `berth status` lists the interruptions.\n", spot.TaintKey, o.notice)
	return nil
}
