package cli

import (
	"context"
	"fmt"
	"io"

	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/status"
)

// printReady tells the user the cluster is up, what it holds and how to
// use it.
func printReady(ctx context.Context, w io.Writer, o *upOptions, c *cluster.Cluster, userConfig string) error {
	how := "started"
	if c.Resumed {
		how = "resumed"
	}
	fmt.Fprintf(w, "\nCluster %q %s and ready in %.2fs: blueprint %s, %d nodes.\n\n", c.Name, how, c.StartedIn.Seconds(), o.bp.Blueprint.Metadata.Name, len(c.Nodes))
	client, err := protobufClient(c.Config)
	if err != nil {
		return err
	}
	sum, err := status.Collect(ctx, client, listing.FromAPI(client), o.bp.Blueprint)
	if err != nil {
		return err
	}
	if err := status.Render(w, sum); err != nil {
		return err
	}
	ctxName := cluster.ContextName(c.Name)
	fmt.Fprintf(w, "\nUse it with kubectl:\n")
	if userConfig != "" {
		fmt.Fprintf(w, "  kubectl --context %s get nodes -L berth.io/pool,topology.kubernetes.io/zone   (context added to %s)\n", ctxName, userConfig)
	}
	fmt.Fprintf(w, "  KUBECONFIG=%s kubectl get nodes\n", c.State.Kubeconfig())
	fmt.Fprintf(w, "See it: berth status --context %s   Stop it: berth down --name %s\n", ctxName, c.Name)
	return nil
}
