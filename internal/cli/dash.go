package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/dash"
	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/problem"
)

// defaultDashListen is where berth dash listens unless told: loopback
// only.
const defaultDashListen = "127.0.0.1:8470"

type dashOptions struct {
	Streams
	kube    *kubeFlags
	file    string
	listen  string
	open    bool
	reports string
	store   string
}

// addFlags adds the dashboard's flags, shared by berth dash and berth up
// --dash (where --listen and --reports take the prefix dash-).
func (o *dashOptions) addFlags(cmd *cobra.Command, prefix string) {
	f := cmd.Flags()
	f.StringVar(&o.listen, prefix+"listen", defaultDashListen, "address the dashboard listens on; loopback unless you ask (another address prints a warning)")
	f.BoolVar(&o.open, "open", false, "open the dashboard in the default browser")
	f.StringVar(&o.reports, prefix+"reports", "", "directory of `berth rehearse --report` output the Rehearsals page lists")
	f.StringVar(&o.store, prefix+"store", "", "model store the Models page lists, as berth model's --store (default $BERTH_MODEL_STORE; none: no models)")
}

// registry is the model store the flags or $BERTH_MODEL_STORE name; nil
// when neither does.
func (o *dashOptions) registry() (*model.Registry, error) {
	url := o.store
	if url == "" {
		url = os.Getenv("BERTH_MODEL_STORE")
	}
	if url == "" {
		return nil, nil
	}
	st, err := store.Open(url)
	if err != nil {
		return nil, err
	}
	return &model.Registry{Store: st}, nil
}

func newDashCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &dashOptions{Streams: s, kube: kube}
	cmd := &cobra.Command{
		Use:   "dash",
		Short: "Serve a live, read-only web view of the cluster: pools, GPUs per team, what waits and why, autoscaler and spot activity, rehearsals",
		Long: `Serve a read-only dashboard of the cluster of the current kubeconfig
context (or --context), read with your credentials: pools and their nodes,
requests against allocatable CPU, memory and GPUs, each team's quota use and
the classes (as berth status prints them); every Pending pod and refused
workload with its verdict and fix (as berth why --all explains them); the
autoscaler's scale-ups and scale-downs, spot interruptions, evictions,
preemptions and HPA rescales; scaled workloads and disruption budgets; and
the reports berth rehearse --report wrote (--reports DIR); and the models,
versions and aliases of the model store (--store, else $BERTH_MODEL_STORE).

Pages update within seconds of a change, without a reload. The dashboard
listens on 127.0.0.1 unless --listen says otherwise, refuses requests that
name another host (DNS rebinding), never reads Secrets, and needs nothing
from the network: every asset is in the binary.

The blueprint (pool sizes, quotas, classes) is -f FILE; else ./berth.yaml;
else the one the cluster recorded, as for berth status.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.Run(cmd.Context()) },
	}
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "blueprint to compare against")
	o.addFlags(cmd, "")
	return cmd
}

func (o *dashOptions) Run(ctx context.Context) error {
	t, err := o.kube.connect(ctx)
	if err != nil {
		return err
	}
	lb, err := clusterBlueprint(ctx, t.client.Kube, o.file, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		return err
	}
	var bp *v1alpha1.Blueprint
	if lb != nil {
		bp = lb.Blueprint
		fmt.Fprintf(o.ErrOut, "Blueprint %s from %s\n", bp.Metadata.Name, lb.source)
	}
	models, err := o.registry()
	if err != nil {
		return err
	}
	stop, err := startDash(ctx, o.Out, o.ErrOut, dashConfig{client: t.client.Kube, bp: bp, context: t.context, listen: o.listen, open: o.open, reports: o.reports, models: models})
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "Press Ctrl-C to stop.")
	<-ctx.Done()
	stop()
	return nil
}

type dashConfig struct {
	client          kubernetes.Interface
	bp              *v1alpha1.Blueprint
	context, listen string
	open            bool
	reports         string
	models          *model.Registry
}

// startDash listens, serves the dashboard until ctx ends or stop is
// called, and prints its address.
func startDash(ctx context.Context, out, errOut io.Writer, c dashConfig) (stop func(), err error) {
	host, _, err := net.SplitHostPort(c.listen)
	if err != nil {
		return nil, problem.Errorf("e.g. --listen 127.0.0.1:8470", "--listen %q is not HOST:PORT: %w", c.listen, err)
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return nil, problem.Errorf("choose another port, or --listen 127.0.0.1:0 for a free one", "the dashboard cannot listen on %s: %w", c.listen, err)
	}
	addr := ln.Addr().String()
	if ip := net.ParseIP(host); !(host == "localhost" || ip != nil && ip.IsLoopback()) {
		fmt.Fprintf(errOut, "warning: the dashboard listens on %s, not on loopback: whoever can reach this address sees the cluster as your credentials let you (pools, pods, quotas, events)\n", addr)
	}
	srv, err := dash.New(dash.Options{Client: c.client, Blueprint: c.bp, Context: c.context, Listen: addr, Reports: c.reports, Models: c.models})
	if err != nil {
		ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	go srv.Run(ctx)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(errOut, "dashboard: %v\n", err)
		}
	}()
	url := "http://" + addr + "/"
	fmt.Fprintf(out, "Dashboard: %s\n", url)
	if c.open {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(errOut, "could not open a browser (%v): open %s yourself\n", err, url)
		}
	}
	return func() {
		cancel()
		shut, cancelShut := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancelShut()
		hs.Shutdown(shut)
		<-done
	}, nil
}

// openBrowser opens url in the desktop's default browser.
func openBrowser(url string) error {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", url).Start()
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
