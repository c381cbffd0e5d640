// Command berth-kueue runs Kueue's controllers, scheduler and webhooks
// (internal/kueue) for a local cluster `berth up` started from a
// blueprint with queueing: Kueue. `berth up` starts it and stops it; it
// is a process of its own because Kueue registers its feature gates in
// the process-wide gate Kubernetes' own components register theirs in,
// under a name they share (DynamicResourceAllocation) with another
// definition: the two cannot be linked into one binary.
//
// It prints "ready" on stdout once Kueue admits (and, with
// --serve-visibility, "visibility ADDRESS" where it serves Kueue's
// visibility API), and writes its logs to stderr. In a rehearsal (--follow-clock) Kueue keeps the rehearsal's
// time: berth's clock asks on stdin, and berth-kueue answers on stdout
// once it has settled (simtime.Follow).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"berth.io/berth/internal/kueue"
	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/version"
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
	visibility := fs.Bool("serve-visibility", false, "serve Kueue's visibility API on a loopback port, printed as \"visibility ADDRESS\" on stdout (berth up passes it)")
	follow := fs.Int64("follow-clock", 0, "follow a rehearsal's clock, which stands at this Unix time in nanoseconds, asked on stdin (berth rehearse passes it)")
	expect := fs.String("expect", "", "the Kueue and clock protocol berth expects (berth up passes its own); berth-kueue stops at once when it was built with others")
	printVersion := fs.Bool("version", false, "print the Kueue and clock protocol berth-kueue was built with, and exit")
	klog.InitFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if *printVersion {
		fmt.Println(version.Peer(simtime.RemoteProtocol))
		return
	}
	if err := checkPeer(*expect, version.Peer(simtime.RemoteProtocol)); err != nil {
		fmt.Fprintln(os.Stderr, "berth-kueue:", err)
		os.Exit(1)
	}
	if err := run(*kubeconfig, *cert, *key, *ca, *fair, *visibility, *follow); err != nil {
		fmt.Fprintln(os.Stderr, "berth-kueue:", err)
		os.Exit(1)
	}
}

// checkPeer compares what berth expects of this binary with what it was
// built with ("" expects nothing: started by hand).
func checkPeer(expect, own string) error {
	if expect == "" || expect == own {
		return nil
	}
	return fmt.Errorf("built with %s, but berth expects %s: build both from one checkout (go build -o bin/ ./cmd/berth ./cmd/berth-kueue), or point BERTH_KUEUE_BINARY at the berth-kueue built with this berth", own, expect)
}

func run(kubeconfig, certFile, keyFile, caFile string, fairSharing, visibility bool, follow int64) error {
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
	opts := kueue.Options{
		Config:      cfg,
		Serving:     serving,
		CABundle:    caBundle,
		FairSharing: fairSharing,
		Ready:       func() { fmt.Println("ready") },
	}
	if visibility {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listening for Kueue's visibility API: %w", err)
		}
		opts.Visibility = &kueue.Visibility{Listener: ln, CertFile: certFile, KeyFile: keyFile, Kubeconfig: kubeconfig}
		fmt.Println("visibility", ln.Addr())
	}
	if follow == 0 {
		return kueue.Run(ctx, opts)
	}
	opts.Clock = simtime.NewClock(time.Unix(0, follow), 0)
	simtime.DropErrorBackoff()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- kueue.Run(ctx, opts) }()
	// The queries are read through Go's poller, not in a blocking
	// system call: the clock's Driver counts goroutines in one as work.
	if err := syscall.SetNonblock(0, true); err != nil {
		return fmt.Errorf("reading the rehearsal's clock on stdin: %w", err)
	}
	queries := os.NewFile(0, "stdin")
	go func() {
		err := simtime.Follow(ctx, opts.Clock, queries, os.Stdout)
		if err == nil {
			err = fmt.Errorf("the rehearsal's clock closed its queries")
		}
		errs <- err
	}()
	return <-errs
}
