package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"berth.io/berth/internal/kubelets"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
)

type nodeOptions struct {
	Streams
	kube *kubeFlags
	stop bool
	sel  kubelets.Selection
	wait time.Duration
}

func newNodeCommand(s Streams, kube *kubeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Stop or start the simulated kubelets of a local cluster's nodes",
	}
	cmd.AddCommand(newNodeVerb(s, kube, true), newNodeVerb(s, kube, false))
	return cmd
}

func newNodeVerb(s Streams, kube *kubeFlags, stop bool) *cobra.Command {
	o := &nodeOptions{Streams: s, kube: kube, stop: stop}
	use, short, long := "start", "Start the simulated kubelets of nodes again", `Start stopped kubelets: they renew their leases and post Ready again, and
the node lifecycle controller removes the unreachable taints.`
	if stop {
		use, short, long = "stop", "Stop the simulated kubelets of nodes, as if they died", `Stop simulated kubelets, as a machine that dies or loses its network: they
renew no lease and post no status. The real node lifecycle controller marks
each node Unknown (NotReady) about 50 s after its last lease renewal
(--node-monitor-grace-period) and taints it node.kubernetes.io/unreachable
(NoSchedule and NoExecute); the taint manager then evicts its pods after
their tolerationSeconds, 300 s unless the pod sets its own (the
DefaultTolerationSeconds admission plugin). --zone ZONE is a zone failure.`
	}
	cmd := &cobra.Command{
		Use:   use + " [NODE...] [--pool POOL] [--zone ZONE]",
		Short: short,
		Long:  long,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.sel.Names = args
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.sel.Pool, "pool", "", "every node of this pool (with NODE or --zone: those of them)")
	f.StringVar(&o.sel.Zone, "zone", "", "every node in this zone")
	f.DurationVar(&o.wait, "wait", 0, "wait up to this long until the nodes are NotReady (stop) or Ready (start)")
	return cmd
}

func (o *nodeOptions) Run(ctx context.Context) error {
	t, err := o.kube.connect(ctx)
	if err != nil {
		return err
	}
	c := t.client.Kube
	local, err := pools.IsLocal(ctx, c)
	if err != nil {
		return err
	}
	if !local {
		return problem.Errorf("point --context at a cluster `berth up` started", "%s is not a berth local cluster: its kubelets are real", t)
	}
	nodes, err := kubelets.Select(ctx, c, o.sel)
	if err != nil {
		return err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	if o.stop {
		err = kubelets.Stop(ctx, c, nodes, time.Now())
	} else {
		err = kubelets.Start(ctx, c, nodes)
	}
	if err != nil {
		return err
	}
	list := strings.Join(names, ", ")
	if o.stop {
		fmt.Fprintf(o.Out, "Stopped the kubelet of %d node(s): %s\n", len(nodes), list)
		fmt.Fprintf(o.Out, "  Their leases are no longer renewed: the node lifecycle controller marks them NotReady (Unknown)\n  about 50 s after the last renewal and taints them node.kubernetes.io/unreachable; their pods are\n  evicted after their tolerationSeconds (300 s by default). `berth node start %s` brings them back.\n", strings.Join(names, " "))
	} else {
		fmt.Fprintf(o.Out, "Started the kubelet of %d node(s): %s\n", len(nodes), list)
	}
	if o.wait == 0 {
		return nil
	}
	want := corev1.ConditionTrue
	if o.stop {
		want = corev1.ConditionUnknown
	}
	begin := time.Now()
	err = wait.PollUntilContextTimeout(ctx, time.Second, o.wait, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if (kubelets.Ready(n) == corev1.ConditionTrue) != (want == corev1.ConditionTrue) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return problem.Errorf("wait longer (--wait), or see `kubectl get nodes`", "the nodes did not become %s within %s: %w", map[bool]string{true: "NotReady", false: "Ready"}[o.stop], o.wait, err)
	}
	fmt.Fprintf(o.Out, "  %s after %s\n", map[bool]string{true: "NotReady", false: "Ready"}[o.stop], time.Since(begin).Round(time.Second))
	return nil
}
