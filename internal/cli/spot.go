package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/kubelets"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
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
tainted ` + v1alpha1.TaintSpotInterruption + `:NoSchedule; its pods get the DisruptionTarget
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
	f.DurationVar(&o.notice, "notice", 0, "the interruption notice (default: the pool's spot.notice, else 30s)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the random pick, for repeatable rehearsals (default: from the clock)")
	cmd.AddCommand(interrupt)
	return cmd
}

func (o *spotOptions) Run(ctx context.Context) error {
	if o.notice < 0 {
		return problem.Errorf("e.g. --notice 30s (Azure, Google Cloud) or --notice 2m (AWS)", "--notice %s: a notice cannot be negative", o.notice)
	}
	t, err := o.kube.connect(ctx)
	if err != nil {
		return err
	}
	c := t.client.Kube
	if local, err := pools.IsLocal(ctx, c); err != nil {
		return err
	} else if !local {
		return problem.Errorf("point --context at a cluster `berth up` started", "%s is not a berth local cluster: its spot capacity is the cloud's", t)
	}
	nodes, err := kubelets.Select(ctx, c, o.sel)
	if err != nil {
		return err
	}
	nodes = spot.Pick(nodes, o.count, o.seed)
	if len(nodes) == 0 {
		return problem.New("wait for them to go, or select others", "every selected node is being interrupted already")
	}
	// Without --notice each node takes its pool's notice.
	notices := map[string]time.Duration{}
	if o.notice == 0 {
		if notices, err = spot.PoolNotices(ctx, c); err != nil {
			return err
		}
	}
	byNotice := map[time.Duration][]corev1.Node{}
	var order []time.Duration
	for _, n := range nodes {
		d := o.notice
		if d == 0 {
			d = spot.NoticeFor(&n, notices)
		}
		if _, ok := byNotice[d]; !ok {
			order = append(order, d)
		}
		byNotice[d] = append(byNotice[d], n)
	}
	now := time.Now()
	for _, d := range order {
		group := byNotice[d]
		if err := spot.Interrupt(ctx, c, group, d, now); err != nil {
			return err
		}
		names := make([]string, len(group))
		for i, n := range group {
			names[i] = n.Name
		}
		fmt.Fprintf(o.Out, "Interrupted %d spot node(s): %s (notice %s)\n", len(group), strings.Join(names, ", "), d)
	}
	fmt.Fprintf(o.Out, "  Tainted %s:NoSchedule; their pods get DisruptionTarget and end within the notice;\n  the nodes are deleted when it ends. `berth status` lists the interruptions.\n", v1alpha1.TaintSpotInterruption)
	return nil
}
