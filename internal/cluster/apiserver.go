package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"berth.io/berth/internal/cluster/pki"
)

// serviceCIDR is the Service IP range; serviceIP is the first address in
// it, the "kubernetes" Service, which the serving certificate covers.
const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
)

// apiServerArgs are the kube-apiserver flags berth runs with, exactly as
// they would be passed to the binary.
func apiServerArgs(p pki.Dir, etcdPort int) []string {
	return []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// No kube-proxy and one API server: nothing to reconcile.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--tls-cert-file=" + p.ServingCert(),
		"--tls-private-key-file=" + p.ServingKey(),
		"--client-ca-file=" + p.CACert(),
		"--service-account-key-file=" + p.ServiceAccountKey(),
		"--service-account-signing-key-file=" + p.ServiceAccountKey(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--profiling=false",
		// The aggregator's identity towards aggregated APIs (berth's
		// metrics server), which trust the user it names in headers.
		"--proxy-client-cert-file=" + p.ProxyClientCert(),
		"--proxy-client-key-file=" + p.ProxyClientKey(),
		"--requestheader-client-ca-file=" + p.ProxyCACert(),
		"--requestheader-allowed-names=" + pki.ProxyClientCN,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--feature-gates=" + featureGates,
	}
}

// featureGates are the alpha features berth's control plane turns on:
// HPAScaleToZero lets an HPA on an external metric (a queue) take a
// workload to zero replicas and back, as KEDA does on real clusters.
const featureGates = "HPAScaleToZero=true"

// runAPIServer starts kube-apiserver on ln through the same steps as its
// command (options → Complete → Validate → Run), without the command's
// process-wide signal handling. It returns when ctx ends or the server
// fails.
func runAPIServer(ctx context.Context, args []string, ln net.Listener) error {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-apiserver feature gates: %w", err)
	}
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	return app.Run(ctx, completed)
}
