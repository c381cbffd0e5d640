package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler"
	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/spot"
	"berth.io/berth/internal/words"
)

type rehearseOptions struct {
	Streams
	file      string
	tracePath string
	speed     float64
	seed      int64
	vs        string
	// provisioner replaces the blueprint's spec.provisioner;
	// vsProvisioner names the provisioner of the second design.
	provisioner   string
	vsProvisioner string
	// queueing replaces the blueprint's spec.queueing; vsQueueing
	// names the queueing of the second design.
	queueing   string
	vsQueueing string
	output     string
	reportDir  string
	until      time.Duration
	prices     string
	cloud      string
	// repeat is how many replications to run, on seeds seed, seed+1,
	// ...; parallel how many at once; jitter the bound of each row's
	// random shift of its submit time.
	repeat   int
	parallel int
	jitter   time.Duration

	bp    *loadedBlueprint
	trace *trace.Trace
	table *prices.Table
}

func newRehearseCommand(s Streams) *cobra.Command {
	o := &rehearseOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "rehearse -f BLUEPRINT --trace FILE",
		Short: "Replay a workload trace on the blueprint's local cluster and report waits, GPU use, disruptions and cost",
		Long: `Replay a workload trace on a local cluster started from the blueprint, on a
clock berth owns, through the real scheduler, quotas, priorities, preemption, node
autoscaler and spot interruptions, and report what the cluster did: each team's
waits, each pool's node-hours and idle GPU-hours, work lost to interruptions, time a
service ran below its budget, and cost.

The clock stands still while the cluster works and jumps to the next timer once it
has settled, so the figures are the design's: the same at any speed, on a busy
machine or an idle one. It runs as fast as the cluster settles; --speed N caps it at
N seconds of trace per second (--speed 1 is real time), to watch it in berth dash.

--vs OTHER.yaml replays the same trace with the same seed on a second blueprint and
prints the two side by side. --vs-provisioner Karpenter (or ClusterAutoscaler) makes
the second design the same blueprint (or OTHER.yaml) provisioned that way: berth's
node autoscaler with cluster-autoscaler's semantics against Karpenter's own
controllers, on the same trace. --vs-queueing Kueue (or ResourceQuota) does the same
for the teams' queueing: ResourceQuota per team namespace against Kueue's own
controllers (berth-kueue, beside berth), with each team's time suspended in its
queue, GPU-hours borrowed and lent, and preemptions by reclaim.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.AddCommand(newRehearseImportCommand(s), newRehearseCompareCommand(s))
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "blueprint file (default ./berth.yaml, else the retail template)")
	f.StringVar(&o.tracePath, "trace", "", "the workload trace, CSV or YAML (see docs/reference/trace-format.md)")
	f.Float64Var(&o.speed, "speed", 0, "at most this many seconds of trace per second of wall time (0: as fast as the cluster settles; 1: real time)")
	f.Int64Var(&o.seed, "seed", 1, "seeds the autoscaler's random expander and the spot pools' random interruptions")
	f.StringVar(&o.vs, "vs", "", "a second blueprint to replay the same trace on, with the same seed, for comparison")
	f.StringVar(&o.provisioner, "provisioner", "", "ClusterAutoscaler or Karpenter: rehearse the blueprint provisioned this way, whatever its spec.provisioner says")
	f.StringVar(&o.vsProvisioner, "vs-provisioner", "", "ClusterAutoscaler or Karpenter: compare with the same blueprint (or --vs's) provisioned this way")
	f.StringVar(&o.queueing, "queueing", "", "ResourceQuota or Kueue: rehearse the blueprint queued this way, whatever its spec.queueing says")
	f.StringVar(&o.vsQueueing, "vs-queueing", "", "ResourceQuota or Kueue: compare with the same blueprint (or --vs's) queued this way")
	f.StringVarP(&o.output, "output", "o", "table", "table or json")
	f.StringVar(&o.reportDir, "report", "", "also write report.json and report.html (charts as SVG) to this directory")
	f.StringVar(&o.prices, "prices", "", "a price table (CSV: cloud,type,region,onDemand,spot,source,date) whose rows replace berth's for the same instance types")
	f.StringVar(&o.cloud, "cloud", "", "aws, azure or gcp: price each pool as the instance type berth export gives it there")
	f.DurationVar(&o.until, "until", 0, "stop at this trace time even if jobs still wait (default: three times the trace's end)")
	f.IntVar(&o.repeat, "repeat", 1, "run this many replications, on seeds --seed, --seed+1, ..., and report each figure's median, range and 95% interval (with --vs: paired on the same seeds, with a verdict)")
	f.IntVar(&o.parallel, "parallel", 0, "with --repeat, run at most this many replications at once, each in a process of its own (0: one per core)")
	f.DurationVar(&o.jitter, "jitter", 0, "shift each row's submit time by a random amount within ± this, drawn from the seed (whole seconds)")
	return cmd
}

func (o *rehearseOptions) Complete() error {
	if o.tracePath == "" {
		return problem.New("pass --trace FILE (CSV or YAML; docs/reference/trace-format.md gives the format)", "berth rehearse needs a trace")
	}
	if o.repeat < 0 {
		return problem.Errorf("pass --repeat 2 or more to replicate, or leave it out for one run", "--repeat %d: a count of runs is not negative", o.repeat)
	}
	if o.parallel < 0 {
		return problem.Errorf("pass --parallel 1 to run the replications one after another", "--parallel %d: a count of runs at once is not negative", o.parallel)
	}
	if o.parallel == 0 {
		o.parallel = runtime.NumCPU()
	}
	if o.jitter < 0 {
		return problem.Errorf("pass a bound such as --jitter 30s: each row moves by up to that much either way", "--jitter %s: the bound of a shift is not negative", o.jitter)
	}
	if o.output != "table" && o.output != "json" {
		return problem.Errorf("pass -o table or -o json", "-o %q: unknown output", o.output)
	}
	for _, p := range []struct{ flag, value string }{{"--provisioner", o.provisioner}, {"--vs-provisioner", o.vsProvisioner}} {
		if p.value != "" && p.value != string(v1alpha1.ProvisionerClusterAutoscaler) && p.value != string(v1alpha1.ProvisionerKarpenter) {
			return problem.Errorf("pass ClusterAutoscaler or Karpenter", "%s %q: not a provisioner berth runs", p.flag, p.value)
		}
	}
	for _, q := range []struct{ flag, value string }{{"--queueing", o.queueing}, {"--vs-queueing", o.vsQueueing}} {
		if q.value != "" && q.value != string(v1alpha1.QueueingResourceQuota) && q.value != string(v1alpha1.QueueingKueue) {
			return problem.Errorf("pass ResourceQuota or Kueue", "%s %q: not a queueing berth runs", q.flag, q.value)
		}
	}
	var err error
	o.bp, err = loadBlueprint(o.file, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		return err
	}
	if o.provisioner != "" {
		o.bp.Spec.Provisioner = v1alpha1.Provisioner(o.provisioner)
	}
	if err := requeue(o.bp, o.queueing, "--queueing"); err != nil {
		return err
	}
	if err := kueueFound(o.bp); err != nil {
		return err
	}
	if o.vsQueueing == string(v1alpha1.QueueingKueue) {
		// The second design runs Kueue: say now if berth-kueue is
		// missing, not after the first design's rehearsal.
		if _, err := cluster.KueueBinary(); err != nil {
			return err
		}
	}
	if o.trace, err = readTrace(o.tracePath); err != nil {
		return err
	}
	// Jittered copies share the recorded waits: a job keeps its team and
	// name, and the wait its row recorded.
	o.trace = o.trace.Jittered(o.jitter, o.seed)
	if errs := o.trace.Check(o.bp.Blueprint); len(errs) > 0 {
		return fmt.Errorf("the trace does not fit blueprint %s (%s):\n%w", o.bp.Metadata.Name, o.bp.source, errs)
	}
	o.table = prices.Shipped()
	if o.prices != "" {
		own, err := prices.Load(o.prices)
		if err != nil {
			return err
		}
		o.table = o.table.With(own)
	}
	if o.cloud != "" {
		if _, err := prices.ParseCloud(o.cloud); err != nil {
			return err
		}
	}
	if o.speed < 0 {
		return problem.Errorf("pass --speed 0 (as fast as the cluster settles) or a ceiling such as 60 (an hour of trace a minute)", "--speed %g: a rehearsal's clock cannot run backwards", o.speed)
	}
	if o.vs != "" && o.vs == o.file && o.vsProvisioner == "" && o.vsQueueing == "" {
		return problem.Errorf("pass another blueprint to --vs, or --vs-provisioner or --vs-queueing to compare provisioners or queueings", "--vs %s: the same blueprint as -f; both designs would be the same", o.vs)
	}
	if o.vs != "" {
		other, err := loadBlueprint(o.vs, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
		if err != nil {
			return err
		}
		if err := requeue(other, o.vsQueueing, "--vs-queueing"); err != nil {
			return err
		}
		if err := kueueFound(other); err != nil {
			return err
		}
		if errs := o.trace.Check(other.Blueprint); len(errs) > 0 {
			return fmt.Errorf("the trace does not fit blueprint %s (%s, --vs):\n%w", other.Metadata.Name, other.source, errs)
		}
	}
	return nil
}

func (o *rehearseOptions) Run(ctx context.Context) error {
	// Ctrl-C, a kill, or the terminal going away: each stops the
	// rehearsal with its report so far and its cluster removed.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if o.repeat > 1 {
		return o.replicate(ctx)
	}
	if o.vs == "" && o.vsProvisioner == "" && o.vsQueueing == "" {
		rep, err := o.rehearse(ctx)
		if rep != nil {
			if werr := o.write(rep); werr != nil {
				return werr
			}
		}
		if ctx.Err() != nil {
			if rep == nil {
				return &ExitError{Code: 130, Err: errors.New("interrupted before the replay started: nothing to report")}
			}
			return &ExitError{Code: 130, Err: errors.New("interrupted: the report above is partial")}
		}
		return err
	}
	// One cluster per process (feature gates, klog and the metrics
	// registry are the process's): each design runs in a child of its
	// own, one after the other.
	designs := o.designs()
	a, err := o.childOn(ctx, designs[0], o.seed, o.ErrOut)
	if err != nil {
		if ctx.Err() != nil {
			return &ExitError{Code: 130, Err: fmt.Errorf("interrupted before the first design's replay started: nothing to report (%w)", err)}
		}
		return err
	}
	if ctx.Err() != nil {
		// Stopped during the first design: its report so far, alone.
		if werr := o.write(a); werr != nil {
			return werr
		}
		return &ExitError{Code: 130, Err: errors.New("interrupted: the report above is partial, and the second design was not rehearsed")}
	}
	b, err := o.childOn(ctx, designs[1], o.seed, o.ErrOut)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped before the second design's replay started.
			if werr := o.write(a); werr != nil {
				return werr
			}
			return &ExitError{Code: 130, Err: errors.New("interrupted: the report above is the first design's alone; the second design was not rehearsed")}
		}
		return err
	}
	if err := writeBoth(o.Out, o.output, o.reportDir, a, b); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return &ExitError{Code: 130, Err: errors.New("interrupted: the second design's report above is partial")}
	}
	return nil
}

// writeBoth writes two designs' reports to dir ("" for none) and prints
// them to out side by side, as a table or as JSON ({"a": ..., "b": ...}):
// for --vs and for berth rehearse compare.
func writeBoth(out io.Writer, output, dir string, a, b *report.Report) error {
	if dir != "" {
		if err := report.WriteDir(dir, a, b); err != nil {
			return err
		}
	}
	if output == "json" {
		return json.NewEncoder(out).Encode(map[string]*report.Report{"a": a, "b": b})
	}
	return report.WriteComparison(out, a, b)
}

// rehearse starts a throwaway local cluster from the blueprint, on a
// virtual clock, and replays the trace on it.
// rehearsalGOGC is the garbage collector's target a rehearsal runs at,
// and rehearsalMemoryLimit the soft limit that holds it back as the
// cluster's live heap grows over a long trace.
const (
	rehearsalGOGC        = 400
	rehearsalMemoryLimit = 2560 << 20 // 2.5 GiB
)

func (o *rehearseOptions) rehearse(ctx context.Context) (*report.Report, error) {
	// The cluster a rehearsal runs allocates fast (every request decoded,
	// admitted through CEL, encoded), and at Go's default GOGC=100 the
	// garbage collector took a fifth of its CPU. A rehearsal trades
	// memory for speed: GOGC=400 (about twice the peak memory, about a
	// fifth less CPU: docs/contributing/benchmarks.md), unless GOGC is
	// set. Past a soft limit of 2.5 GiB (unless GOMEMLIMIT is set) the
	// collector runs sooner: the first day under Kueue, whose live heap
	// grows with the Workloads, peaked at 3.9 GiB without it.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(rehearsalGOGC)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(rehearsalMemoryLimit)
	}
	bp, err := seeded(o.bp.Blueprint, o.seed)
	if err != nil {
		return nil, err
	}
	// A rehearsal killed with SIGKILL cannot remove its directory: the
	// next one does.
	pruned, err := rehearse.PruneStale("")
	for _, d := range pruned {
		fmt.Fprintf(o.ErrOut, "Removed %s, left by a rehearsal that was killed\n", d)
	}
	if err != nil {
		fmt.Fprintf(o.ErrOut, "Could not remove every directory left by killed rehearsals: %v\n", err)
	}
	dir, release, err := rehearse.TempDir("")
	if err != nil {
		return nil, err
	}
	defer release()
	fmt.Fprintf(o.ErrOut, "Rehearsing %s on %s: starting a local cluster on a virtual clock\n", o.tracePath, o.bp.source)
	loaded := &loadedBlueprint{Blueprint: bp, source: o.bp.source}
	clk := simtime.NewClock(time.Now(), 0)
	c, err := cluster.Start(ctx, cluster.Options{
		Name:          "rehearse",
		StateDir:      filepath.Join(dir, "cluster"),
		Blueprint:     bp,
		UnsafeNoFsync: true,
		Progress:      indent(o.ErrOut),
		Clock:         clk,
		Autoscaler:    autoscaler.Options{Seed: uint64(o.seed)},
		Karpenter:     cluster.KarpenterOptions{Prices: o.table},
		Apply: func(ctx context.Context, c *cluster.Cluster, step func(string, ...any)) error {
			return applyOnUp(ctx, step, c, loaded)
		},
	})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	pace := "as fast as the cluster settles"
	if o.speed > 0 {
		pace = fmt.Sprintf("at most %g seconds of trace a second", o.speed)
	}
	fmt.Fprintf(o.ErrOut, "Replaying %d jobs over %s of trace time, %s\n", len(o.trace.Jobs), o.trace.End(), pace)
	if n := len(o.trace.RecordedWaits); n > 0 {
		fmt.Fprintf(o.ErrOut, "The report sets the replay's waits beside the waits %s recorded for %s\n", trace.WaitsPath(o.tracePath), words.Count(n, "job"))
	}
	if o.speed > 0 {
		// Paced for a person to watch: say how. The cluster's files go
		// with the rehearsal.
		fmt.Fprintf(o.ErrOut, "Watch it: berth dash --kubeconfig %s (until the rehearsal ends)\n", c.State.Kubeconfig())
	}
	cloud, _ := prices.ParseCloud(o.cloud)
	prices := prices.Price(o.bp.Blueprint, o.table, cloud)
	rep, err := rehearse.Run(ctx, rehearse.Options{
		Client: client, Blueprint: bp, Trace: o.trace, Clock: clk, Speed: o.speed, Until: o.until, Prices: prices, Progress: o.ErrOut,
		Interrupt: func(ctx context.Context, nodes []corev1.Node, notice time.Duration, now time.Time) error {
			return spot.Interrupt(ctx, client, nodes, notice, now)
		},
	})
	if rep != nil {
		rep.Blueprint = o.bp.Metadata.Name
		rep.Provisioner = provisionerOf(bp)
		rep.Queueing = string(bp.Spec.Queueing)
		rep.Trace = o.tracePath
		rep.Seed = o.seed
		k := rep.Clock
		most := ""
		if len(k.WaitedOn) > 0 {
			most = "; waited most on " + k.WaitedOn[0]
		}
		fmt.Fprintf(o.ErrOut, "Replayed %s of trace in %s of wall time: %d clock steps, %s settling (the longest %s%s)\n",
			time.Duration(rep.Rehearsed).Round(time.Second), time.Duration(rep.Wall).Round(time.Second), k.Steps,
			time.Duration(k.Settling).Round(time.Millisecond), time.Duration(k.MaxSettle).Round(time.Millisecond), most)
		if line := boundBy(k); line != "" {
			fmt.Fprintln(o.ErrOut, line)
		}
		if k.Late > 0 {
			fmt.Fprintf(o.ErrOut, "Warning: the clock stepped %s before the cluster had settled (clock.late in the report): this run's figures may differ from another's on seed %d.\n",
				words.Count(k.Late, "time"), rep.Seed)
		}
	}
	return rep, err
}

// boundBy says, of a rehearsal's clock, what it spent the most settling
// after and which requests its API server spent the most time on: where
// a slow replay's time went (the report's clock section has the rest).
func boundBy(k report.ClockReport) string {
	var parts []string
	if len(k.Causes) > 0 {
		c := k.Causes[0]
		parts = append(parts, fmt.Sprintf("most settling after timers of %s (%s over %d moments, %d of them its alone)",
			c.Component, time.Duration(c.Settling).Round(time.Millisecond), c.Moments, c.Alone))
	}
	if len(k.Requests) > 0 {
		r := k.Requests[0]
		refused := ""
		if r.Refused > 0 {
			refused = fmt.Sprintf(", %d refused", r.Refused)
		}
		parts = append(parts, fmt.Sprintf("the API server's longest work %s %s (%d requests%s, %s)",
			r.Verb, r.Resource, r.Count, refused, time.Duration(r.Served).Round(time.Millisecond)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Bound by: " + strings.Join(parts, "; ")
}

// seeded is a copy of bp whose spot pools' random interruptions are
// seeded from seed, each pool its own.
func seeded(bp *v1alpha1.Blueprint, seed int64) (*v1alpha1.Blueprint, error) {
	raw, err := json.Marshal(bp)
	if err != nil {
		return nil, err
	}
	out := &v1alpha1.Blueprint{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, err
	}
	for i := range out.Spec.Pools {
		if s := out.Spec.Pools[i].Spot; s != nil && s.MeanTimeBetweenInterruptions != nil {
			s.Seed = seed + int64(i)
		}
	}
	return out, nil
}

// write prints the report as asked and writes the report directory.
func (o *rehearseOptions) write(rep *report.Report) error {
	if o.reportDir != "" {
		if err := report.WriteDir(o.reportDir, rep, nil); err != nil {
			return err
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return report.WriteTable(o.Out, rep)
}

// design is one blueprint as a child rehearses it: its file, and the
// provisioner and queueing that replace its own ("" keeps them).
type design struct{ file, provisioner, queueing string }

// childOn rehearses d on seed in a child process of this same binary
// and reads its JSON report; its progress goes to progress.
func (o *rehearseOptions) childOn(ctx context.Context, d design, seed int64, progress io.Writer) (*report.Report, error) {
	file, provisioner, queueing := d.file, d.provisioner, d.queueing
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"rehearse", "--trace", o.tracePath, "--speed", strconv.FormatFloat(o.speed, 'g', -1, 64), "--seed", strconv.FormatInt(seed, 10), "-o", "json"}
	if o.jitter > 0 {
		args = append(args, "--jitter", o.jitter.String())
	}
	if file != "" {
		args = append(args, "-f", file)
	}
	if provisioner != "" {
		args = append(args, "--provisioner", provisioner)
	}
	if queueing != "" {
		args = append(args, "--queueing", queueing)
	}
	if o.until > 0 {
		args = append(args, "--until", o.until.String())
	}
	if o.prices != "" {
		args = append(args, "--prices", o.prices)
	}
	if o.cloud != "" {
		args = append(args, "--cloud", o.cloud)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	// A parent killed with SIGKILL cannot stop its child: the kernel does.
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = 30 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, progress
	runErr := cmd.Run()
	var rep report.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("rehearsing %s: %w", file, runErr)
		}
		return nil, fmt.Errorf("rehearsing %s: reading its report: %w", file, err)
	}
	return &rep, nil
}

// indent prefixes each line written to w with three spaces.
func indent(w io.Writer) io.Writer {
	pr, pw := io.Pipe()
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			fmt.Fprintf(w, "   %s\n", s.Text())
		}
	}()
	return pw
}

// requeue has bp queue as queueing says (--queueing or --vs-queueing,
// named by flag), if it says, and checks the blueprint as it then is: a
// team's queue settings mean something only under Kueue.
func requeue(bp *loadedBlueprint, queueing, flag string) error {
	if queueing == "" || v1alpha1.Queueing(queueing) == bp.Spec.Queueing {
		return nil
	}
	bp.Spec.Queueing = v1alpha1.Queueing(queueing)
	if errs, _ := v1alpha1.Validate(bp.Blueprint); len(errs) > 0 {
		return fmt.Errorf("blueprint %s (%s) queued with %s (%s):\n%w", bp.Metadata.Name, bp.source, queueing, flag, errs)
	}
	return nil
}

// provisionerOf names what provisions bp's User pools, for the report.
func provisionerOf(bp *v1alpha1.Blueprint) string {
	if bp.Spec.UsesKarpenter() {
		return string(v1alpha1.ProvisionerKarpenter)
	}
	return string(v1alpha1.ProvisionerClusterAutoscaler)
}
