// Package cluster runs berth's local cluster: embedded etcd, the real
// kube-apiserver, kube-scheduler and kube-controller-manager from
// k8s.io/kubernetes, and KWOK's node and pod controllers standing in for
// kubelets, all in one process.
//
// Feature gates, klog and the metrics registry are process-wide, so a
// process runs at most one cluster.
package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/egressselector"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/storage"
	_ "berth.io/berth/internal/version" // stamps the Kubernetes version
)

// Options says which cluster to start and how.
type Options struct {
	// Name names the cluster; its kubeconfig context is berth-NAME.
	Name string
	// StateDir holds the cluster's state. Required.
	StateDir string
	// Blueprint is the defaulted, validated blueprint. Required.
	Blueprint *v1alpha1.Blueprint
	// Nodes overrides pool sizes for this cluster (--nodes POOL=N).
	Nodes map[string]int32
	// Port is the API server's port. Zero keeps the port the cluster had,
	// or picks a free one for a new cluster.
	Port int
	// UnsafeNoFsync turns off etcd's fsync: faster, and a crash may lose
	// the cluster. For benchmarks and throwaway clusters.
	UnsafeNoFsync bool
	// Progress receives one line per start-up step. Nil discards them.
	Progress io.Writer
	// Timeout bounds the wait for readiness. Zero means two minutes.
	Timeout time.Duration
	// Clock, when set, is a rehearsal's virtual clock (internal/simtime):
	// every component that keeps time by a clock keeps it by this one
	// (the scheduler's queue, KWOK's stages, the Job, disruption and HPA
	// controllers, berth's controllers and node autoscaler, Karpenter),
	// and the cluster tells the clock's Activity what it has in flight.
	// The clock stands still until its Driver (the rehearsal's) moves
	// it. Nil runs the cluster on the wall clock, as `berth up` does.
	Clock *simtime.Clock
	// Autoscaler tunes the node autoscaler (`berth up`'s flags). Its
	// Profile is always the blueprint's name.
	Autoscaler autoscaler.Options
	// Karpenter tunes Karpenter where the blueprint provisions with it:
	// its own flags (`berth rehearse` compresses its batch windows) and
	// the prices its cheapest-fit choice reads. Zero is Karpenter's
	// defaults and berth's shipped price table.
	Karpenter KarpenterOptions
	// Apply, when set, runs as soon as the API serves, alongside the rest
	// of the start (`berth up` applies the blueprint with it), and Start
	// returns once it has returned and the cluster is ready. It reports
	// its own steps through step, on Start's clock.
	Apply func(ctx context.Context, c *Cluster, step func(format string, args ...any)) error
}

func (o *Options) autoscalerOptions() autoscaler.Options {
	a := o.Autoscaler
	a.Profile = o.Blueprint.Metadata.Name
	if o.Clock != nil {
		// Its scans look at the cluster as each moment leaves it.
		a.Clock = o.Clock.Phase(simtime.PhaseAutoscaler)
	}
	return a
}

// clock is the clock the cluster's components keep time by.
func (o *Options) clock() clock.WithTickerAndDelayedExecution {
	if o.Clock != nil {
		return o.Clock
	}
	return clock.RealClock{}
}

// Cluster is a running local cluster.
type Cluster struct {
	Name  string
	State State
	// Config is an admin client configuration for the cluster.
	Config *rest.Config
	// Server is the API server's URL.
	Server string
	// Nodes are the blueprint's pool nodes, all Ready when Start returns.
	Nodes []string
	// Resumed is true when the state directory already held the cluster.
	Resumed bool
	// storage are the blueprint's drivers' provision controllers, made
	// before the API server starts.
	storage storage.Prepared
	// children are the processes started once the cluster runs: the
	// storage drivers first seen after start (runDriver).
	children children
	// StartedIn is how long Start took, from call to ready.
	StartedIn time.Duration

	cancel     context.CancelFunc
	metrics    *metricsServing
	autoscaler *autoscaler.Controller
	etcd       *embed.Etcd
	// etcdInMemory is etcd's API served in memory to the API server, on
	// a rehearsal's clock (serveEtcdInMemory).
	etcdInMemory *etcdInMemory
	release      func()
	wg           sync.WaitGroup
	errs         chan error
	once         sync.Once

	// karpenterInstalled closes once Karpenter's NodePools are applied;
	// nil where the autoscaler provisions.
	karpenterInstalled chan struct{}
	// kueueReady closes once Kueue admits (startKueue); nil where the
	// blueprint queues with ResourceQuota.
	kueueReady chan struct{}
}

var startOnce sync.Once

// Start starts (or resumes) the cluster in opts.StateDir and returns once
// it is ready: the API serving, every pool node Ready, and the default
// ServiceAccount present. On error nothing is left running.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	begin := time.Now()
	if opts.Blueprint == nil || opts.StateDir == "" {
		return nil, errors.New("cluster.Start: Blueprint and StateDir are required")
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	var progressMu sync.Mutex // opts.Apply reports from its own goroutine
	step := func(format string, args ...any) {
		progressMu.Lock()
		defer progressMu.Unlock()
		fmt.Fprintf(progress, " • %-44s %6.2fs\n", fmt.Sprintf(format, args...), time.Since(begin).Seconds())
	}
	state := State{Dir: opts.StateDir}
	release, err := state.lock()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Name: opts.Name, State: state, release: release, errs: make(chan error, 8)}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	m, err := state.readMeta()
	if err != nil {
		return nil, err
	}
	c.Resumed = m != nil
	if m != nil && opts.Name != "" && m.Name != opts.Name {
		return nil, problem.Errorf(fmt.Sprintf("pass --name %s, or another --state-dir", m.Name), "state directory %s holds cluster %q, not %q", state.Dir, m.Name, opts.Name)
	}
	if m == nil {
		m = &meta{Format: stateFormat, Name: opts.Name, Created: time.Now().UTC()}
	}
	if err := os.WriteFile(state.PidFile(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("writing pid file: %w", err)
	}
	if err := routeLogs(state.LogFile()); err != nil {
		return nil, err
	}
	if err := servePprof(step); err != nil {
		return nil, err
	}
	if err := state.pki().Ensure(serviceIP); err != nil {
		return nil, err
	}
	if err := state.pki().EnsureProxyClient(); err != nil {
		return nil, err
	}
	if opts.Port != 0 {
		m.APIServerPort = opts.Port
	}
	if m.APIServerPort == 0 {
		if m.APIServerPort, err = freePort(); err != nil {
			return nil, err
		}
	}
	ln, err := listen(m.APIServerPort, "API server")
	if err != nil {
		return nil, err
	}
	if err := pickEtcdPorts(m); err != nil {
		ln.Close()
		return nil, err
	}
	if err := state.writeMeta(m); err != nil {
		ln.Close()
		return nil, fmt.Errorf("writing cluster.json: %w", err)
	}

	c.etcd, err = startEtcd(state.etcdDir(), m.EtcdClientPort, m.EtcdPeerPort, state.LogFile(), opts.UnsafeNoFsync)
	if err != nil {
		ln.Close()
		return nil, err
	}
	step("etcd ready (fsync %s)", map[bool]string{true: "off", false: "on"}[opts.UnsafeNoFsync])
	var etcdDial egressselector.Lookup
	if opts.Clock != nil {
		simtime.DropErrorBackoff()
		c.etcdInMemory = serveEtcdInMemory(c.etcd)
		etcdDial = c.etcdInMemory.lookup
	}

	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.Server = "https://127.0.0.1:" + strconv.Itoa(m.APIServerPort)
	admin, err := adminKubeconfig(m.Name, c.Server, state.pki())
	if err != nil {
		ln.Close()
		return nil, err
	}
	if err := clientcmd.WriteToFile(*admin, state.Kubeconfig()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", state.Kubeconfig()); err != nil {
		ln.Close()
		return nil, err
	}
	c.Config.QPS, c.Config.Burst = 500, 1000
	if opts.Clock != nil {
		// Every client made from the cluster's config (berth's
		// controllers, the autoscaler, Karpenter, a rehearsal's) has its
		// requests counted from when they leave: a rehearsal's clock
		// waits for those on the wire too.
		sent := opts.Clock.Activity().Counter("requests sent by berth's clients")
		c.Config.Wrap(sent.RoundTripper)
		c.Config.UserAgent = rest.DefaultKubernetesUserAgent() + " " + simtime.OnClockAgent
		simtime.NoThrottle(c.Config)
	}
	client, err := kubernetes.NewForConfig(protobuf(c.Config))
	if err != nil {
		ln.Close()
		return nil, err
	}
	// Before anything in this process watches the API, the API server's
	// own informers too (storage.Prepared says why).
	c.storage = storage.Prepare(runCtx, client, storageDrivers(opts.Blueprint))
	metrics, err := metricsServingFor(state.pki())
	if err != nil {
		ln.Close()
		return nil, err
	}
	c.metrics = metrics
	metrics.serve()
	resolveLocalServices(metrics.ln.Addr(), m.APIServerPort)
	c.run(runCtx, "kube-apiserver", func(ctx context.Context) error {
		return runAPIServer(ctx, apiServerArgs(state.pki(), m.EtcdClientPort), ln, opts.Clock, etcdDial)
	})

	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, timeout)
	defer cancelWait()
	// The API server serves all that the start needs a second or more
	// before it is ready: /readyz then waits only for two post-start hooks
	// that make the system PriorityClasses and the default RBAC roles, and
	// each polls once a second from the moment the server serves
	// (pkg/registry/scheduling/rest, pkg/registry/rbac/rest). The
	// components, the nodes and opts.Apply start meanwhile; ready still
	// means /readyz, below.
	if err := c.waitFor(waitCtx, "the API server to serve", func(ctx context.Context) (bool, error) {
		return apiServing(ctx, client), nil
	}); err != nil {
		return nil, err
	}
	step("kube-apiserver serving on %s", c.Server)

	kubeconfig := state.Kubeconfig()
	c.run(runCtx, "kube-controller-manager", func(ctx context.Context) error {
		// It gives the API server ten seconds to be healthy, then fails;
		// under the load of thousands of nodes registering, the bootstrap
		// hooks can take longer than that.
		if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			return apiReady(ctx, client), nil
		}); err != nil {
			return nil // stopped before the API server was ready
		}
		return runControllerManager(ctx, kubeconfig, state.pki(), opts.Clock)
	})
	c.run(runCtx, "kube-scheduler", func(ctx context.Context) error { return runScheduler(ctx, kubeconfig, opts.Clock) })
	var kwokSent *simtime.Counter
	if opts.Clock != nil {
		kwokSent = opts.Clock.Activity().Counter("requests sent by KWOK")
	}
	c.run(runCtx, "kwok", func(ctx context.Context) error { return runKWOK(ctx, kubeconfig, opts.clock(), kwokSent) })
	// The blueprint is recorded before berth's controllers start, so the
	// autoscaler's first scan already has the pools and the profile.
	if err := markLocal(waitCtx, client, m.Name); err != nil {
		return nil, err
	}
	if err := recorded.Write(waitCtx, client, opts.Blueprint); err != nil {
		return nil, err
	}
	if err := c.startControllers(runCtx, client, &opts); err != nil {
		return nil, err
	}
	if opts.Blueprint.Spec.UsesKueue() {
		if err := c.startKueue(runCtx, state, opts.Blueprint.Spec.FairSharing, opts.Clock); err != nil {
			return nil, err
		}
	} else if err := retireKueue(waitCtx, client); err != nil {
		return nil, err
	}
	applied := func() error { return nil }
	if opts.Apply != nil {
		applyCtx, cancelApply := context.WithCancel(waitCtx)
		applied = alongside(func() error {
			err := c.waitKueue(applyCtx)
			if err == nil && c.kueueReady != nil {
				step("Kueue %s admitting", v1alpha1.KueueVersion)
			}
			if err == nil {
				err = opts.Apply(applyCtx, c, step)
			}
			if err != nil {
				// Start's waits stop at a component's error: the user
				// need not wait for thousands of nodes to hear of it.
				select {
				case c.errs <- err:
				default:
				}
			}
			return err
		})
		// However Start returns, the apply has ended by then.
		defer func() { cancelApply(); applied() }()
	}
	parallel := 32
	if opts.Clock != nil {
		parallel = 1
	}
	if c.Nodes, err = EnsurePoolNodes(waitCtx, client, opts.Blueprint, opts.Nodes, parallel); err != nil {
		return nil, err
	}
	step("%d pool nodes registered", len(c.Nodes))
	if err := c.waitForNodes(waitCtx, client); err != nil {
		return nil, err
	}
	step("nodes Ready")
	if err := c.waitFor(waitCtx, "the API server to be ready", func(ctx context.Context) (bool, error) {
		return apiReady(ctx, client), nil
	}); err != nil {
		return nil, err
	}
	step("kube-apiserver ready")
	if err := c.waitFor(waitCtx, "the default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return nil, err
	}
	step("default ServiceAccount present")
	if err := c.startDevicePlugin(waitCtx, client, opts.Blueprint, step); err != nil {
		return nil, err
	}
	if err := applied(); err != nil {
		return nil, err
	}
	if err := c.scanAutoscaler(waitCtx, opts.Blueprint); err != nil {
		return nil, err
	}
	if err := c.startAfterReady(runCtx, client); err != nil {
		return nil, err
	}
	c.StartedIn = time.Since(begin)
	return c, nil
}

// apiReady reports whether the API server is ready: /readyz passes.
func apiReady(ctx context.Context, client kubernetes.Interface) bool {
	var code int
	client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
	return code == http.StatusOK
}

// apiServing reports whether the API server serves what the start
// needs: every /readyz check but the two slow bootstrap hooks, and the
// kube-system namespace (made by the system namespaces controller, not a
// readiness check), where the start records the cluster's blueprint.
func apiServing(ctx context.Context, client kubernetes.Interface) bool {
	var code int
	client.Discovery().RESTClient().Get().AbsPath("/readyz").
		Param("exclude", "poststarthook/rbac/bootstrap-roles").
		Param("exclude", "poststarthook/scheduling/bootstrap-system-priority-classes").
		Do(ctx).StatusCode(&code)
	if code != http.StatusOK {
		return false
	}
	_, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	return err == nil
}

// alongside runs f in its own goroutine and returns a function that waits
// for f to return and gives its error, as often as it is called.
func alongside(f func() error) func() error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = <-done })
		return err
	}
}

// markLocal records in the cluster that it is a berth local cluster, so
// that `berth apply` run from anywhere may manage its nodes.
func markLocal(ctx context.Context, client kubernetes.Interface, name string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: pools.LocalClusterConfigMap, Namespace: metav1.NamespaceSystem},
		Data:       map[string]string{"cluster": name},
	}
	_, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("marking the cluster as berth's: %w", err)
	}
	return nil
}

// run starts a component; an error it returns before the cluster stops
// is reported on Errors.
func (c *Cluster) run(ctx context.Context, name string, f func(context.Context) error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := f(ctx); err != nil && ctx.Err() == nil {
			c.errs <- fmt.Errorf("%s stopped: %w", name, err)
		}
	}()
}

// Errors reports a component that failed while the cluster was running.
func (c *Cluster) Errors() <-chan error { return c.errs }

// waitFor polls cond until it holds, a component fails, or ctx ends.
func (c *Cluster) waitFor(ctx context.Context, what string, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-c.errs:
			return false, err
		default:
		}
		return cond(ctx)
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("timed out waiting for %s; the control plane's log is %s", what, c.State.LogFile())
	}
	return err
}

// waitForNodes waits for every pool node to be Ready. It follows them
// through one watch: a List per poll would send every node, which with
// thousands of them cost the API server more than their start-up did.
func (c *Cluster) waitForNodes(ctx context.Context, client kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.LabelPool }))
	nodes := factory.Core().V1().Nodes().Lister()
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	return c.waitFor(ctx, "every pool node to be Ready", func(context.Context) (bool, error) {
		return nodesReady(nodes, c.Nodes), nil
	})
}

func nodesReady(lister corelisters.NodeLister, names []string) bool {
	for _, name := range names {
		n, err := lister.Get(name)
		if err != nil || !isReady(n) {
			return false
		}
	}
	return true
}

func isReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Stop shuts the cluster down: components first, then etcd, so that
// everything written is on disk. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.once.Do(func() {
		if c.cancel != nil {
			c.cancel()
		}
		done := make(chan struct{})
		go func() { c.wg.Wait(); c.children.stop(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // a component ignoring its context must not block shutdown
		}
		if c.metrics != nil {
			c.metrics.close()
		}
		if c.etcdInMemory != nil {
			c.etcdInMemory.stop()
		}
		if c.etcd != nil {
			c.etcd.Close()
		}
		os.Remove(c.State.PidFile())
		if c.release != nil {
			c.release()
		}
	})
}

// pickEtcdPorts keeps etcd's ports from the last start when they are free
// and picks new ones otherwise; nothing outside the process uses them.
func pickEtcdPorts(m *meta) error {
	for _, p := range []*int{&m.EtcdClientPort, &m.EtcdPeerPort} {
		if *p != 0 {
			if l, err := listen(*p, "etcd"); err == nil {
				l.Close()
				continue
			}
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		*p = port
	}
	return nil
}

// routeLogs sends klog (every component's logging), KWOK's and the etcd
// clients' to the cluster's log file, keeping the terminal for berth's
// own output.
func routeLogs(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening log %s: %w", path, err)
	}
	var flagErr error
	startOnce.Do(func() {
		logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		// klog copies errors to stderr unless told otherwise; only a
		// fatal error belongs on the user's terminal.
		flagErr = errors.Join(fs.Set("logtostderr", "false"), fs.Set("alsologtostderr", "false"), fs.Set("stderrthreshold", "FATAL"))
	})
	klog.SetOutput(f)
	// KWOK logs through slog and the standard logger. Its Info level is a
	// line per object it touches (every pod patched, every lease renewed:
	// 500 lines a second at 5,000 nodes, gigabytes a day); its warnings and
	// errors, such as a stage it failed to apply, are kept.
	slog.SetDefault(slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn})))
	log.SetOutput(f)
	routeEtcdClientLogs(f)
	return flagErr
}

// protobuf is cfg speaking Kubernetes' protobuf encoding, as the
// controller manager and the scheduler do by default: at tens of thousands
// of pods, decoding every watched pod from JSON costs the in-process
// clients several times the CPU. Only typed clients of built-in types may
// use it; dynamic clients and custom resources speak JSON.
func protobuf(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return cfg
}

// storageDrivers are the CSI drivers of bp's storage classes.
func storageDrivers(bp *v1alpha1.Blueprint) []string {
	if bp == nil || bp.Spec.Storage == nil {
		return nil
	}
	var out []string
	for _, c := range bp.Spec.Storage.Classes {
		out = append(out, storage.Driver(c.Name))
	}
	return out
}
