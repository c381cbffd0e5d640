package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/pkg/controller/job"

	"berth.io/berth/internal/cluster/pki"
)

// disabledControllers need things a simulated cluster has none of: a
// cloud, a pod network, volume plugins; and the policy status controller,
// which berth runs itself once the cluster is ready (policystatus.go).
var disabledControllers = []string{
	"nodeipam", "persistentvolume-binder", "persistentvolume-expander", "attachdetach",
	"cloud-node-lifecycle", "service", "route", "ttl", policyStatusController,
}

// runControllerManager runs kube-controller-manager. It is not optional:
// it creates each namespace's default ServiceAccount, fills quota status,
// computes PDB status for evictions, runs the workload controllers and
// evicts pods from NotReady nodes.
// extra are flags added after berth's own (a rehearsal's compressed
// timers); a later flag wins. A jobSpeed above 1 divides the Job
// controller's backoffs by it.
func runControllerManager(ctx context.Context, kubeconfig string, p pki.Dir, extra []string, jobSpeed float64) error {
	if jobSpeed > 1 {
		compressJobBackoffs(jobSpeed)
	}
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
	controllers := "*,-" + strings.Join(disabledControllers, ",-")
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
	args = append(args, extra...)
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
	return app.Run(ctx, c.Complete())
}

// compressJobBackoffs divides the Job controller's backoffs by speed: its
// retry of a Job whose pods the API refused (a quota: 1 s doubling to a
// minute) and its wait before replacing a failed pod (10 s doubling to
// 10 minutes). They take no flag; upstream exports them as variables,
// read when the controller is made and at each sync, and one process
// runs one cluster, so setting them before the controller manager starts
// reaches that cluster's Job controller alone.
func compressJobBackoffs(speed float64) {
	scale := func(d *time.Duration) { *d = time.Duration(float64(*d) / speed) }
	scale(&job.DefaultJobApiBackOff)
	scale(&job.MaxJobApiBackOff)
	scale(&job.DefaultJobPodFailureBackOff)
	scale(&job.MaxJobPodFailureBackOff)
}
