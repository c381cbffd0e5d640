// Command berth-kueue runs Kueue's controllers, scheduler and webhooks
// (internal/kueue) for a local cluster `berth up` started from a
// blueprint with queueing: Kueue. `berth up` starts it and stops it; it
// is a process of its own because Kueue registers its feature gates in
// the process-wide gate Kubernetes' own components register theirs in,
// under a name they share (DynamicResourceAllocation) with another
// definition: the two cannot be linked into one binary.
//
// It prints "ready" on stdout once Kueue admits, and writes its logs to
// stderr.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"berth.io/berth/internal/kueue"
)

func main() {
	// Its own flag set: controller-runtime registers --kubeconfig on
	// the process's.
	fs := flag.NewFlagSet("berth-kueue", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "the cluster's kubeconfig")
	cert := fs.String("tls-cert-file", "", "the webhook server's certificate, for 127.0.0.1")
	key := fs.String("tls-private-key-file", "", "the webhook server's key")
	ca := fs.String("client-ca-bundle", "", "the CA that signed the certificate, which the API server trusts")
	fair := fs.Bool("fair-sharing", false, "turn on Kueue's fair sharing (the blueprint's spec.fairSharing)")
	klog.InitFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if err := run(*kubeconfig, *cert, *key, *ca, *fair); err != nil {
		fmt.Fprintln(os.Stderr, "berth-kueue:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, certFile, keyFile, caFile string, fairSharing bool) error {
	if kubeconfig == "" || certFile == "" || keyFile == "" || caFile == "" {
		return fmt.Errorf("--kubeconfig, --tls-cert-file, --tls-private-key-file and --client-ca-bundle are required (berth up passes them)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	serving, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	caBundle, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	return kueue.Run(ctx, kueue.Options{
		Config:      cfg,
		Serving:     serving,
		CABundle:    caBundle,
		FairSharing: fairSharing,
		Ready:       func() { fmt.Println("ready") },
	})
}
