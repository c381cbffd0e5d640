package cli

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/metricsapi"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
)

type loadOptions struct {
	Streams
	kube      *kubeFlags
	namespace string
	rps       float64
	gpuUtil   float64
	cpuUtil   float64
	depth     int64
	itemTime  time.Duration
	speed     float64
}

func newLoadCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &loadOptions{Streams: s, kube: kube}
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Put simulated load on a local cluster's workloads and queues, for its HPAs to scale on",
		Long: `Simulated pods run no code, so a local cluster's metrics come from a load
you set. berth serves it through the metrics APIs every HPA reads:
  custom.metrics.k8s.io    ` + v1alpha1.MetricRequestsPerSecond + ` and ` + v1alpha1.MetricGPUUtil + ` per Ready pod
  external.metrics.k8s.io  each queue's depth, as rabbitmq_queue_messages_ready,
                           kafka_consumergroup_lag and
                           aws_sqs_approximate_number_of_messages_visible_average,
                           selected by queue=NAME
  metrics.k8s.io           CPU and memory per pod and node (kubectl top)
A workload's load is a total spread over its Ready pods: as the HPA adds
replicas, each carries less. A queue with an item time drains as its
workers run. The load is kept in the cluster (ConfigMap
kube-system/berth-load).`,
	}
	set := &cobra.Command{
		Use:   "set (deployment|statefulset)/NAME [-n NAMESPACE] [--rps N] [--gpu-util P] [--cpu-util P]",
		Short: "Set the load on a workload",
		Long: `Set the load on a workload's pods.
  --rps N        N requests per second to the workload, spread over its Ready
                 pods (each reports N / pods as ` + v1alpha1.MetricRequestsPerSecond + `)
  --gpu-util P   P percent GPU utilisation on each of its Ready pods now; the
                 work stays the same as replicas change (90% on 3 pods is
                 54% on 5), never above 100% on one
  --cpu-util P   P percent of each Ready pod's CPU request now, the same way`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.set(cmd.Context(), args[0], cmd)
		},
	}
	set.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace of the workload (default: the kubeconfig context's, else default)")
	set.Flags().Float64Var(&o.rps, "rps", 0, "requests per second to the whole workload")
	set.Flags().Float64Var(&o.gpuUtil, "gpu-util", 0, "GPU utilisation in percent on each Ready pod now")
	set.Flags().Float64Var(&o.cpuUtil, "cpu-util", 0, "CPU utilisation in percent of each Ready pod's request now")
	queue := &cobra.Command{
		Use:   "queue NAME --depth N [--item-time D]",
		Short: "Set a queue's depth (messages waiting; Kafka: consumer lag), and how fast its workers drain it",
		Long: `Set a queue's depth: the messages waiting now (Kafka: the consumer lag).
  --item-time D  how long one worker takes over one item (a Go duration:
                 500ms, 30s, 2m): each Ready pod of each workload an HPA
                 scales on the queue (an External metric selecting
                 ` + v1alpha1.MetricQueueLabel + `=NAME, as berth new batch writes it) takes an item
                 every D, and the depth falls as they run, down to 0.
                 While a profile plays, D is in the profile's time (at
                 --speed 60, 30s takes half a second). 0 takes it away:
                 the queue no longer drains. Left out, the queue keeps
                 the item time it has (a new queue has none, and never
                 drains).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("depth") {
				return problem.New(fmt.Sprintf("berth load queue %s --depth N", args[0]), "--depth is required")
			}
			return o.queue(cmd.Context(), args[0], cmd.Flags().Changed("item-time"))
		},
	}
	queue.Flags().Int64Var(&o.depth, "depth", 0, "messages waiting in the queue")
	queue.Flags().DurationVar(&o.itemTime, "item-time", 0, "how long one worker takes over one item; 0: the queue never drains")
	play := &cobra.Command{
		Use:   "play FILE [--speed X]",
		Short: "Replay a load profile: steps in time, each setting loads and queue depths",
		Long: `Replay a load profile file, a time series of steps, in the cluster: each step
sets its loads when the profile reaches its time, and the last step's loads
stay. The cluster keeps playing after the command returns; ` + "`berth load show`" + `
says where it is, ` + "`berth load stop`" + ` stops it. A profile:

  steps:
  - at: 0s
    workloads: [{namespace: team-a, name: recommender, rps: 40}]
    queues: {embeddings: 0}
  - at: 2h
    workloads: [{namespace: team-a, name: recommender, rps: 400, gpuWork: 270}]
    queues: {embeddings: 120}
  queues:
  - {name: embeddings, itemTime: 30s}

(kind defaults to Deployment; gpuWork and cpuWork are totals in percent of
one pod's GPU or CPU request, summed over the pods. A step sets a queue's
depth, as berth load queue --depth does; the queues listed beside the steps
drain as their workers run, one item every itemTime of profile time per
worker, from when the profile is played.)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.play(cmd.Context(), args[0]) },
	}
	play.Flags().Float64Var(&o.speed, "speed", 1, "profile seconds per real second (60 plays an hour in a minute)")
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the profile being played; the loads it reached stay",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.stop(cmd.Context()) },
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the load in effect now",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.show(cmd.Context()) },
	}
	clear := &cobra.Command{
		Use:   "clear",
		Short: "Remove every load, queue depth and profile",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.clear(cmd.Context()) },
	}
	cmd.AddCommand(set, queue, play, stop, show, clear)
	return cmd
}

// connect reaches a berth local cluster: on any other cluster the load is
// real and the metrics are the adapters'.
func (o *loadOptions) connect(ctx context.Context) (kubernetes.Interface, error) {
	t, err := o.kube.connect(ctx)
	if err != nil {
		return nil, err
	}
	c := t.client.Kube
	if local, err := pools.IsLocal(ctx, c); err != nil {
		return nil, err
	} else if !local {
		return nil, problem.Errorf("point --context at a cluster `berth up` started", "%s is not a berth local cluster: its load is real, and its metrics come from its own adapters", t)
	}
	return c, nil
}

func (o *loadOptions) set(ctx context.Context, ref string, cmd *cobra.Command) error {
	kind, name, ok := strings.Cut(ref, "/")
	switch strings.ToLower(kind) {
	case "deployment", "deploy", "deployments", "deployment.apps":
		kind = "Deployment"
	case "statefulset", "sts", "statefulsets", "statefulset.apps":
		kind = "StatefulSet"
	default:
		ok = false
	}
	if !ok || name == "" {
		return problem.Errorf("e.g. berth load set deployment/recommender -n team-a --rps 200", "%q: name the workload as deployment/NAME or statefulset/NAME", ref)
	}
	f := cmd.Flags()
	if !f.Changed("rps") && !f.Changed("gpu-util") && !f.Changed("cpu-util") {
		return problem.New("add --rps N, --gpu-util P or --cpu-util P", "no load given")
	}
	for _, v := range []struct {
		flag string
		val  float64
	}{{"rps", o.rps}, {"gpu-util", o.gpuUtil}, {"cpu-util", o.cpuUtil}} {
		if f.Changed(v.flag) && v.val < 0 {
			return fmt.Errorf("--%s %g: a load may not be negative", v.flag, v.val)
		}
	}
	if f.Changed("gpu-util") && o.gpuUtil > 100 {
		return problem.Errorf("for more work than the pods can take, set --gpu-util 100: the HPA adds replicas until the work fits", "--gpu-util %g: a GPU is at most 100%% busy", o.gpuUtil)
	}
	ns := o.namespace
	if ns == "" {
		var err error
		if ns, _, err = o.kube.loader().Namespace(); err != nil {
			return err
		}
	}
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	// The workload must exist, and its Ready pods turn a per-pod
	// utilisation into the work that stays as replicas change.
	var ready int32
	switch kind {
	case "Deployment":
		d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return workloadNotFound(err, ref, ns)
		}
		ready = d.Status.ReadyReplicas
	case "StatefulSet":
		s, err := c.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return workloadNotFound(err, ref, ns)
		}
		ready = s.Status.ReadyReplicas
	}
	pods := float64(max(ready, 1))
	w := metricsapi.WorkloadLoad{Namespace: ns, Kind: kind, Name: name}
	var said []string
	if f.Changed("rps") {
		w.RPS = &o.rps
		said = append(said, fmt.Sprintf("%g requests/s in all (%s per Ready pod)", o.rps, v1alpha1.MetricRequestsPerSecond))
	}
	if f.Changed("gpu-util") {
		work := o.gpuUtil * pods
		w.GPUWork = &work
		said = append(said, fmt.Sprintf("%g%% GPU on each of %d Ready pod(s) now: %g%% of one GPU in all (%s)", o.gpuUtil, int(pods), work, v1alpha1.MetricGPUUtil))
	}
	if f.Changed("cpu-util") {
		work := o.cpuUtil * pods
		w.CPUWork = &work
		said = append(said, fmt.Sprintf("%g%% CPU on each of %d Ready pod(s) now: %g%% of one pod's request in all", o.cpuUtil, int(pods), work))
	}
	if _, err := metricsapi.UpdateLoad(ctx, c, func(l *metricsapi.Load) error { l.Set(w); return nil }); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s/%s in %s: %s.\n", strings.ToLower(kind), name, ns, strings.Join(said, "; "))
	if ready == 0 {
		fmt.Fprintln(o.Out, "  It has no Ready pod yet: the load is counted as if on one, and shows once pods are Ready.")
	}
	fmt.Fprintln(o.Out, "  Spread over its Ready pods as replicas change; the HPA reads it at its next sync (15 s).")
	return nil
}

func workloadNotFound(err error, ref, ns string) error {
	if apierrors.IsNotFound(err) {
		return problem.Errorf("pass -n with the workload's namespace, or apply the workload first", "%s not found in namespace %s", ref, ns)
	}
	return err
}

func (o *loadOptions) queue(ctx context.Context, name string, itemTimeSet bool) error {
	if o.depth < 0 {
		return problem.Errorf(fmt.Sprintf("berth load queue %s --depth 0 empties it", name), "--depth %d: a queue cannot hold fewer than 0 messages", o.depth)
	}
	if o.itemTime < 0 {
		return problem.Errorf("give how long one worker takes over one item, like --item-time 30s; --item-time 0 for a queue that never drains", "--item-time %s: an item cannot take less than no time", o.itemTime)
	}
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	l, err := metricsapi.UpdateLoad(ctx, c, func(l *metricsapi.Load) error {
		l.SetQueue(name, o.depth)
		if itemTimeSet {
			l.SetItemTime(name, o.itemTime)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Queue %s: %d message(s) waiting.\n", name, o.depth)
	if it, ok := l.ItemTimes[name]; ok {
		in := ""
		if l.Playback != nil {
			in = fmt.Sprintf(" of profile time (speed %g)", l.Playback.Speed)
		}
		fmt.Fprintf(o.Out, "  Drains as its workers run: each Ready pod of a workload an HPA scales on it takes an item every %s%s.\n", it.Duration, in)
	} else {
		fmt.Fprintf(o.Out, "  It never drains: give --item-time D for its workers to take an item every D.\n")
	}
	fmt.Fprintf(o.Out, "  Served as each broker's depth metric with the selector %s=%s; an HPA on it acts at its next sync (15 s).\n",
		v1alpha1.MetricQueueLabel, name)
	return nil
}

func (o *loadOptions) play(ctx context.Context, file string) error {
	if o.speed <= 0 {
		return problem.Errorf("e.g. --speed 1 (real time) or --speed 60 (an hour a minute)", "--speed %g: the profile must move forward", o.speed)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	p, err := metricsapi.ParseProfile(data)
	if bad, ok := problem.As(err); ok {
		bad.File = file
		return bad
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	if _, err := metricsapi.UpdateLoad(ctx, c, func(l *metricsapi.Load) error {
		l.Play(p, now, o.speed)
		return nil
	}); err != nil {
		return err
	}
	length := time.Duration(float64(p.Length()) / o.speed).Round(time.Second)
	fmt.Fprintf(o.Out, "Playing %s: %d step(s) over %s of profile time, %s at --speed %g.\n  `berth load show` says where it is; `berth load stop` stops it.\n",
		file, len(p.Steps), p.Length(), length, o.speed)
	for _, q := range p.Queues {
		fmt.Fprintf(o.Out, "  Queue %s drains as its workers run: an item every %s of profile time per worker.\n", q.Name, q.ItemTime.Duration)
	}
	return nil
}

func (o *loadOptions) stop(ctx context.Context) error {
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	_, err = metricsapi.UpdateLoad(ctx, c, func(l *metricsapi.Load) error {
		if l.Playback == nil {
			return fmt.Errorf("no profile is playing")
		}
		// Keep what the profile reached: its loads become the set ones.
		reached := l.At(now)
		l.Workloads, l.Queues, l.Playback = reached.Workloads, reached.Queues, nil
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "Stopped the profile; the loads it reached stay (`berth load show`).")
	return nil
}

func (o *loadOptions) clear(ctx context.Context) error {
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := metricsapi.UpdateLoad(ctx, c, func(l *metricsapi.Load) error { *l = metricsapi.Load{}; return nil }); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "No load: every workload and queue reads zero.")
	return nil
}

func (o *loadOptions) show(ctx context.Context) error {
	c, err := o.connect(ctx)
	if err != nil {
		return err
	}
	l, err := metricsapi.ReadLoad(ctx, c)
	if err != nil {
		return err
	}
	now := time.Now()
	if p := l.Playback; p != nil {
		at := p.Elapsed(now)
		state := "playing"
		if at >= p.Profile.Length() {
			state = "finished (its last step's loads stay)"
		}
		fmt.Fprintf(o.Out, "Profile: %s, at %s of %s (speed %g)\n\n", state, min(at, p.Profile.Length()).Round(time.Second), p.Profile.Length(), p.Speed)
	}
	in := l.At(now)
	if len(in.Workloads) == 0 && len(in.Queues) == 0 {
		fmt.Fprintln(o.Out, "No load set: every workload and queue reads zero. Set one with `berth load set` or `berth load queue`.")
		return nil
	}
	tw := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	if len(in.Workloads) > 0 {
		fmt.Fprintln(tw, "NAMESPACE\tWORKLOAD\tREQUESTS/S\tGPU WORK\tCPU WORK")
		for _, w := range in.Workloads {
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\n", w.Namespace, strings.ToLower(w.Kind), w.Name, num(w.RPS, ""), num(w.GPUWork, "%"), num(w.CPUWork, "%"))
		}
		fmt.Fprintln(tw)
	}
	if len(in.Queues) > 0 {
		names := make([]string, 0, len(in.Queues))
		for q := range in.Queues {
			names = append(names, q)
		}
		sort.Strings(names)
		fmt.Fprintln(tw, "QUEUE\tDEPTH\tITEM TIME")
		for _, q := range names {
			item := "- (never drains)"
			if it, ok := in.ItemTimes[q]; ok {
				item = it.Duration.String()
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", q, in.Queues[q], item)
		}
	}
	return tw.Flush()
}

func num(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%g%s", *v, unit)
}
