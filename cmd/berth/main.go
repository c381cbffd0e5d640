// Command berth turns one blueprint file into a Kubernetes cluster ready
// for ML and data workloads, and rehearses it locally on a real control
// plane with simulated nodes.
package main

import (
	"context"
	"os"

	"berth.io/berth/internal/cli"
)

func main() {
	cmd := cli.NewRootCommand(context.Background(), cli.StdStreams())
	os.Exit(cli.Exit(os.Stderr, cmd.Execute()))
}
