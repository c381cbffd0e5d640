package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"

	"berth.io/berth/internal/cluster/pki"
	"berth.io/berth/internal/simtime"
)

// disabledControllers need things a simulated cluster has none of: a
// cloud, a pod network, volume plugins that attach and expand (the PV
// controller, persistentvolume-binder, runs: it binds claims to the
// volumes berth's storage drivers make, internal/storage); and the
// policy status controller, which berth runs itself once the cluster is
// ready (policystatus.go).
var disabledControllers = []string{
	"nodeipam", "persistentvolume-expander", "attachdetach",
	"cloud-node-lifecycle", "service", "route", "ttl", policyStatusController,
}

// clockedControllers are the controllers a rehearsal's clock must reach
// and kube-controller-manager would build on the wall clock: on a
// virtual clock berth disables them there and runs them itself
// (clocked.go), upstream's code on the rehearsal's clock.
var clockedControllers = []string{"job", "disruption", "horizontalpodautoscaling"}

// runControllerManager runs kube-controller-manager. It is not optional:
// it creates each namespace's default ServiceAccount, fills quota status,
// computes PDB status for evictions, runs the workload controllers and
// evicts pods from NotReady nodes. On a rehearsal's clock (clk non-nil)
// the Job, disruption and HPA controllers run on that clock beside it.
func runControllerManager(ctx context.Context, kubeconfig string, p pki.Dir, clk *simtime.Clock) error {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return fmt.Errorf("kube-controller-manager options: %w", err)
	}
	known, off, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	named := s.Flags(known, off, aliases)
	s.ParsedFlags = &named
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	disabled := disabledControllers
	if clk != nil {
		disabled = append(slices.Clip(disabled), clockedControllers...)
	}
	controllers := "*,-" + strings.Join(disabled, ",-")
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=" + controllers,
		"--service-account-private-key-file=" + p.ServiceAccountKey(),
		"--root-ca-file=" + p.CACert(),
		"--cluster-signing-cert-file=" + p.CACert(),
		"--cluster-signing-key-file=" + p.CAKey(),
		"--use-service-account-credentials=false",
		// The default 20 QPS would take minutes to create a large
		// Deployment's pods.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		"--feature-gates=" + featureGates,
	}
	if clk != nil {
		// One worker each for the controllers that make a workload's
		// pods: on a virtual clock their reconciles take no trace time,
		// and one worker makes pods in the order their owners changed,
		// so the scheduler's queue holds them in the same order every
		// rehearsal.
		args = append(args, "--concurrent-replicaset-syncs=1", "--concurrent-deployment-syncs=1", "--concurrent-statefulset-syncs=1", "--concurrent-daemonset-syncs=1")
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-controller-manager feature gates: %w", err)
	}
	c, err := s.Config(ctx, known, off, aliases)
	if err != nil {
		return fmt.Errorf("kube-controller-manager config: %w", err)
	}
	if clk == nil {
		return app.Run(ctx, c.Complete())
	}
	// Its requests are counted from when they leave, as berth's own are.
	sent := clk.Activity().Counter("requests sent by kube-controller-manager")
	c.Kubeconfig.Wrap(sent.RoundTripper)
	simtime.NoThrottle(c.Kubeconfig)
	errs := make(chan error, 2)
	go func() { errs <- app.Run(ctx, c.Complete()) }()
	go func() { errs <- runClockedControllers(ctx, c.Kubeconfig, &c.ComponentConfig, clk) }()
	if err := <-errs; err != nil {
		return err
	}
	return <-errs
}
