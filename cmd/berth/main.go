// Command berth turns one blueprint file into a Kubernetes cluster ready
// for ML and data workloads, and rehearses it locally on a real control
// plane with simulated nodes.
package main

import (
	"context"
	"os"

	"berth.io/berth/internal/cli"
	"berth.io/berth/internal/cluster"
)

func main() {
	// A process a cluster started of this binary (a storage driver's)
	// runs here and exits.
	cluster.Child()
	cmd := cli.NewRootCommand(context.Background(), cli.StdStreams())
	os.Exit(cli.Exit(os.Stderr, cmd.Execute()))
}
