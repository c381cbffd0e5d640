// Command berth turns one blueprint file into a Kubernetes cluster ready
// for ML and data workloads, and rehearses it locally on a real control
// plane with simulated nodes.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"berth.io/berth/internal/cli"
)

func main() {
	cmd := cli.NewRootCommand(context.Background(), cli.StdStreams())
	if err := cmd.Execute(); err != nil {
		var exit *cli.ExitError
		if errors.As(err, &exit) {
			if exit.Err != nil {
				fmt.Fprintln(os.Stderr, "error:", exit.Err)
			}
			os.Exit(exit.Code)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
