package cluster

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// runScheduler runs the stock kube-scheduler (default profile, every
// default plugin) against the cluster's kubeconfig.
func runScheduler(ctx context.Context, kubeconfig string) error {
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		// The defaults (50 QPS) bind 50 pods a second at most; a
		// simulated cluster has no kubelets to protect and many pods.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-scheduler flags: %w", err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-scheduler feature gates: %w", err)
	}
	cc, sched, err := app.Setup(ctx, opts)
	if err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	return app.Run(ctx, cc, sched)
}
