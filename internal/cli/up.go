package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/storage"
	"berth.io/berth/internal/version"
)

// readyMarker ends a detached child's report when the cluster is ready.
const readyMarker = "berth:ready"

type upOptions struct {
	Streams
	file          string
	name          string
	stateDir      string
	detach        bool
	nodes         []string
	port          int
	unsafeNoFsync bool
	timeout       time.Duration
	reportFD      int // set on the detached child: where its report goes
	autoscaler    upAutoscalerFlags
	// dash starts the dashboard beside the cluster, with dashOpts.
	dash     bool
	dashOpts dashOptions

	sizes map[string]int32
	bp    *loadedBlueprint
}

func newUpCommand(s Streams) *cobra.Command {
	o := &upOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start (or resume) a local cluster from the blueprint",
		Long: `Start a local cluster: the real kube-apiserver, kube-scheduler and
kube-controller-manager over embedded etcd, with one simulated node per pool
member. Running it again resumes the same cluster with every object intact.

Without -f, berth reads ./berth.yaml, or else starts the retail template.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if o.detach && o.reportFD == 0 {
				return o.runDetached()
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "blueprint file (default ./berth.yaml, else the retail template)")
	f.StringVar(&o.name, "name", defaultClusterName, "cluster name; its kubeconfig context is berth-NAME")
	f.StringVar(&o.stateDir, "state-dir", "", "state directory (default $BERTH_HOME/clusters/NAME, BERTH_HOME defaulting to ~/.berth)")
	f.BoolVarP(&o.detach, "detach", "d", false, "run in the background; stop it with `berth down`")
	f.StringSliceVar(&o.nodes, "nodes", nil, "start a pool at this size for this cluster, as POOL=N (repeatable)")
	f.IntVar(&o.port, "port", 0, "API server port on 127.0.0.1 (default: the port it had, or a free one)")
	f.BoolVar(&o.unsafeNoFsync, "unsafe-no-fsync", false, "turn off etcd's fsync: faster, but a crash may lose the cluster")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the cluster to be ready")
	o.autoscaler.add(f)
	f.BoolVar(&o.dash, "dash", false, "also serve the dashboard (berth dash) while the cluster runs")
	o.dashOpts.addFlags(cmd, "dash-")
	f.IntVar(&o.reportFD, "report-fd", 0, "")
	f.MarkHidden("report-fd")
	return cmd
}

func (o *upOptions) Complete() error {
	if o.stateDir == "" {
		o.stateDir = stateDirFor(o.name)
	}
	abs, err := filepath.Abs(o.stateDir)
	if err != nil {
		return err
	}
	o.stateDir = abs
	o.bp, err = loadBlueprint(o.file, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		return err
	}
	// Said before a cluster starts, not once it is up.
	if err := kueueFound(o.bp); err != nil {
		return err
	}
	if err := o.parseNodes(); err != nil {
		return err
	}
	return o.autoscaler.complete(o.bp.Blueprint)
}

// parseNodes reads --nodes POOL=N against the blueprint's pools.
func (o *upOptions) parseNodes() error {
	o.sizes = map[string]int32{}
	for _, s := range o.nodes {
		pool, n, ok := strings.Cut(s, "=")
		size, err := strconv.ParseInt(n, 10, 32)
		if !ok || err != nil || size < 0 {
			return problem.Errorf("e.g. --nodes gpu=2", "--nodes %q is not POOL=N with N a whole number of nodes", s)
		}
		p := findPool(o.bp.Blueprint.Spec.Pools, pool)
		if p == nil {
			return problem.Errorf(fmt.Sprintf("use one of %s", poolNames(o.bp.Blueprint.Spec.Pools)), "--nodes %s: the blueprint %s has no pool %q", s, o.bp.source, pool)
		}
		if p.Mode == "System" && size < 1 {
			return problem.Errorf("give it 1 or more", "--nodes %s: pool %s is a System pool and needs at least one node", s, pool)
		}
		o.sizes[pool] = int32(size)
	}
	return nil
}

func (o *upOptions) Run(ctx context.Context) error {
	report := o.Out
	var reportFile *os.File
	if o.reportFD != 0 {
		// The pipe `berth up -d` waits on: no process this one starts
		// (berth-kueue) may hold it open after this one closes it.
		syscall.CloseOnExec(o.reportFD)
		reportFile = os.NewFile(uintptr(o.reportFD), "report")
		report = reportFile
	}
	fail := func(err error) error {
		if reportFile != nil {
			fmt.Fprintf(reportFile, "error: %v\n", err)
			reportFile.Close()
		}
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(report, "Starting cluster %q from %s (Kubernetes %s)\n", o.name, o.bp.source, version.Kubernetes())
	c, err := cluster.Start(ctx, cluster.Options{
		Name:          o.name,
		StateDir:      o.stateDir,
		Blueprint:     o.bp.Blueprint,
		Nodes:         o.sizes,
		Port:          o.port,
		UnsafeNoFsync: o.unsafeNoFsync,
		Progress:      report,
		Timeout:       o.timeout,
		Autoscaler:    o.autoscaler.options(),
		// The blueprint is applied while the nodes start.
		Apply: func(ctx context.Context, c *cluster.Cluster, step func(string, ...any)) error {
			if err := os.WriteFile(filepath.Join(o.stateDir, "blueprint.yaml"), o.bp.raw, 0o600); err != nil {
				return fmt.Errorf("saving the blueprint to the state directory: %w", err)
			}
			return applyOnUp(ctx, step, c, o.bp)
		},
	})
	if err != nil {
		return fail(err)
	}
	defer c.Stop()
	if c.Resumed {
		o.notePools(ctx, report, c)
	}
	userConfig, err := mergeKubeconfig(c)
	if err != nil {
		fmt.Fprintf(report, "warning: %v\n", err)
	}
	if err := printReady(ctx, report, o, c, userConfig); err != nil {
		return fail(err)
	}
	if o.dash {
		stopDash, err := o.startDash(ctx, report, c)
		if err != nil {
			return fail(err)
		}
		defer stopDash()
	}
	if reportFile != nil {
		fmt.Fprintln(reportFile, readyMarker)
		reportFile.Close()
	} else {
		fmt.Fprintln(o.Out, "\nRunning; press Ctrl-C to stop (the cluster's state is kept).")
	}
	select {
	case <-ctx.Done():
	case err := <-c.Errors():
		return err
	}
	if reportFile == nil {
		fmt.Fprintln(o.Out, "\nStopping…")
	}
	c.Stop()
	if reportFile == nil {
		fmt.Fprintf(o.Out, "Stopped. `berth up --name %s` resumes it; `berth down --name %s --purge` deletes it.\n", o.name, o.name)
	}
	return nil
}

// startDash serves the dashboard of the cluster just started, in this
// process, until it stops.
func (o *upOptions) startDash(ctx context.Context, report io.Writer, c *cluster.Cluster) (func(), error) {
	models, err := o.dashOpts.registry()
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = commandQPS, commandBurst
	client, err := protobufClient(cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(report)
	return startDash(ctx, report, report, dashConfig{client: client, bp: o.bp.Blueprint, context: cluster.ContextName(c.Name),
		listen: o.dashOpts.listen, open: o.dashOpts.open, reports: o.dashOpts.reports, models: models})
}

func mergeKubeconfig(c *cluster.Cluster) (string, error) {
	admin, err := clientcmd.LoadFromFile(c.State.Kubeconfig())
	if err != nil {
		return "", err
	}
	return cluster.MergeKubeconfig(admin)
}

// runDetached starts this same command as a background process whose
// report comes back over a pipe, shows it, and returns once the cluster is
// ready (or has failed).
func (o *upOptions) runDetached() error {
	if err := os.MkdirAll(o.stateDir, 0o700); err != nil {
		return err
	}
	state := cluster.State{Dir: o.stateDir}
	if state.Running() {
		pid, _ := state.Pid()
		return problem.Errorf(fmt.Sprintf("use it as it is, or stop it first with `berth down --name %s`", o.name), "cluster %q is already running (pid %d, state %s)", o.name, pid, o.stateDir)
	}
	logFile, err := os.OpenFile(state.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var args []string
	for _, a := range os.Args[1:] {
		if a != "--detach" && a != "-d" && a != "--detach=true" {
			args = append(args, a)
		}
	}
	args = append(args, "--report-fd=3", "--state-dir="+o.stateDir)
	child := exec.Command(exe, args...)
	child.Stdout, child.Stderr = logFile, logFile
	child.ExtraFiles = []*os.File{w}
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return fmt.Errorf("starting background berth: %w", err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	// The child reports progress line by line, then either the ready
	// marker or "error: " and the (possibly multi-line) error.
	ready := false
	var errLines []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == readyMarker:
			ready = true
		case errLines != nil:
			errLines = append(errLines, line)
		case strings.HasPrefix(line, "error: "):
			errLines = []string{strings.TrimPrefix(line, "error: ")}
		default:
			fmt.Fprintln(o.Out, line)
		}
	}
	if ready {
		fmt.Fprintf(o.Out, "\nRunning in the background (pid %d, log %s).\nStop it with `berth down --name %s`.\n", child.Process.Pid, state.LogFile(), o.name)
		child.Process.Release()
		return nil
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		child.Process.Kill()
	}
	if errLines == nil {
		errLines = []string{"the background berth exited before the cluster was ready"}
	}
	return fmt.Errorf("%s\n(the control plane's log: %s)", strings.Join(errLines, "\n"), state.LogFile())
}

// applyOnUp makes the blueprint's objects (teams, quotas, limits,
// priorities, budgets) true on the cluster being started, and waits until
// the team namespaces admit pods and the guardrails are in force. Pools
// are sized by the start itself.
func applyOnUp(ctx context.Context, step func(string, ...any), c *cluster.Cluster, bp *loadedBlueprint) error {
	cl := apply.Client{}
	var err error
	if cl.Kube, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	if cl.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		return err
	}
	// Ready means a workload created now is admitted as the design says:
	// a class's pod admitted before its policy is in force would wait for
	// ever without its tolerations.
	// The storage classes are the local cluster's own (Karpenter's
	// NodePools, when it provisions, are startKarpenter's).
	owned, err := storage.Owned(bp.Blueprint)
	if err != nil {
		return err
	}
	plan, err := apply.Run(ctx, cl, bp.Blueprint, apply.RunOptions{Plan: apply.Options{SkipPools: true, Owned: owned}, ColdStart: true, GuardrailTimeout: time.Minute})
	switch {
	case errors.Is(err, apply.ErrGuardrailsPending):
		return problem.Errorf(fmt.Sprintf("see the control plane's log, %s", c.State.LogFile()), "%w", err)
	case err != nil && plan == nil:
		return fmt.Errorf("applying the blueprint: %w", err)
	case err != nil:
		return problem.Errorf(fmt.Sprintf("see `berth plan --context %s`", cluster.ContextName(c.Name)), "applying the blueprint: %w", err)
	}
	var namespaces []string
	for _, t := range bp.Blueprint.Spec.Teams {
		namespaces = append(namespaces, t.Namespaces...)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, ns := range namespaces {
			if _, err := cl.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the team namespaces' default ServiceAccounts: %w", err)
	}
	step("blueprint applied (%d changes)", len(plan.Objects))
	if bp.Blueprint.Spec.Guardrails != v1alpha1.GuardrailsOff {
		step("guardrails in force")
	}
	return nil
}

// notePools says, on a resumed cluster whose pools differ from the
// blueprint, how to make them match, rather than draining nodes during
// start-up.
func (o *upOptions) notePools(ctx context.Context, report io.Writer, c *cluster.Cluster) {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return
	}
	changes, _, err := pools.Plan(ctx, client, o.bp.Blueprint, false, nil)
	if err == nil && len(changes) > 0 {
		fmt.Fprintf(report, "   note: %d pool(s) differ from the blueprint; `berth plan --context %s` shows how, `berth apply` makes them match\n", len(changes), cluster.ContextName(c.Name))
	}
}
