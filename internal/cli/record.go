package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/record"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/words"
)

type recordOptions struct {
	Streams
	kube      *kubeFlags
	file      string
	since     string
	watch     bool
	watchFor  time.Duration
	output    string
	teamFrom  string
	anonymize bool
	// now is the clock's reading; nil means time.Now.
	now func() time.Time
}

func newRecordCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &recordOptions{Streams: s, kube: kube}
	cmd := &cobra.Command{
		Use:   "record (--since D | --watch [--for D]) -o TRACE",
		Short: "Write a live cluster's work (finished Jobs, GPU services) as a trace in berth's format, mapped to the blueprint's teams and classes",
		Long: `Record what a cluster ran as a trace that berth rehearse replays: a row per
finished Job (training or batch: its pods, one pod's requests, whole GPUs, its
pods' run time, submitted at its creation) and per Deployment or StatefulSet
whose pods ask for GPUs (inference, its replicas). Kueue's Workloads say when
each Job was admitted. Names, shapes and times only: never images, commands,
arguments, environment or Secrets; --anonymize hashes the names too.

--since D reads what the cluster still holds from the last D (7d, 36h, or an
RFC 3339 time). Jobs deleted by their ttlSecondsAfterFinished are gone: the
summary on stderr counts those events still name, and the Jobs that set a TTL.
--watch writes each Job as it finishes until Ctrl-C or --for D: every row is
written whole as it comes, and a second run onto the same file skips the
rows it already has. With --since too, it first writes what the cluster holds
from then.

Teams come from the blueprint's namespaces (-f FILE; else ./berth.yaml; else
the one the cluster recorded; else each namespace's berth.io/team label), or
from a label (--team-from label=KEY, on the workload or its namespace). A
namespace of no team is reported with its count and the fix. See
docs/commands/record.md for every rule.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.Run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "blueprint whose teams and classes the rows map to")
	f.StringVar(&o.since, "since", "", "record what the cluster holds from this long ago (7d, 36h) or this RFC 3339 time")
	f.BoolVar(&o.watch, "watch", false, "watch, and write each Job as it finishes (Ctrl-C stops; run again to resume the file)")
	f.DurationVar(&o.watchFor, "for", 0, "with --watch, stop after this long (0: until Ctrl-C)")
	f.StringVarP(&o.output, "output", "o", "", "trace file to write (- for stdout, read mode only)")
	f.StringVar(&o.teamFrom, "team-from", "", "take teams from a label, label=KEY, instead of the blueprint's namespaces")
	f.BoolVar(&o.anonymize, "anonymize", false, "write stable hashes (job-<10 hex>, svc-<10 hex>) in place of workload names")
	return cmd
}

func (o *recordOptions) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

// validate checks the flags and returns the window's start (zero for
// none) and the label key of --team-from.
func (o *recordOptions) validate() (since time.Time, teamLabel string, err error) {
	switch {
	case !o.watch && o.since == "":
		return since, "", problem.New("pass --since 7d to read what the cluster holds, or --watch to write Jobs as they finish", "record needs --since or --watch")
	case o.output == "":
		return since, "", problem.New("pass -o FILE, e.g. -o last-week.csv", "record needs an output file (-o)")
	case o.watch && o.output == "-":
		return since, "", problem.New("pass -o FILE: a watch appends to its file and resumes it", "--watch cannot write to stdout")
	case o.watchFor != 0 && !o.watch:
		return since, "", problem.New("add --watch, or leave --for out", "--for is for --watch")
	case o.watchFor < 0:
		return since, "", problem.Errorf("pass a positive duration, e.g. --for 24h", "--for %s is negative", o.watchFor)
	}
	if o.since != "" {
		if since, err = parseSince(o.since, o.clock()); err != nil {
			return since, "", err
		}
	}
	if o.teamFrom != "" {
		key, ok := strings.CutPrefix(o.teamFrom, "label=")
		if !ok || key == "" {
			return since, "", problem.Errorf("write --team-from label=KEY, e.g. --team-from label=team", "--team-from %q is not label=KEY", o.teamFrom)
		}
		teamLabel = key
	}
	return since, teamLabel, nil
}

// parseSince reads --since: a Go duration, a count of days (7d), or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, problem.Errorf("write a length like 7d, 36h or 90m, or a time like 2026-01-05T00:00:00Z", "--since %q is neither a length of time nor an RFC 3339 time", s)
}

func (o *recordOptions) Run(ctx context.Context) error {
	since, teamLabel, err := o.validate()
	if err != nil {
		return err
	}
	t, err := o.kube.connect(ctx)
	if err != nil {
		return err
	}
	lb, err := clusterBlueprint(ctx, t.client.Kube, o.file, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		return err
	}
	opts := record.Options{TeamLabel: teamLabel, Since: since, Anonymize: o.anonymize}
	if lb != nil {
		opts.Blueprint = lb.Blueprint
		fmt.Fprintf(o.ErrOut, "Teams and classes of blueprint %s, from %s.\n", lb.Metadata.Name, lb.source)
	} else if teamLabel == "" {
		fmt.Fprintf(o.ErrOut, "No blueprint (no -f, no ./berth.yaml, none recorded in the cluster): teams from the namespaces' %s label.\n", v1alpha1.LabelTeam)
	}
	if o.watch {
		return o.runWatch(ctx, t, opts)
	}
	c, err := readCluster(ctx, t, o.ErrOut)
	if err != nil {
		return err
	}
	rec := record.Convert(*c, opts)
	var w io.Writer = o.Out
	if o.output != "-" {
		f, err := os.Create(o.output)
		if err != nil {
			return problem.Errorf("check the path, or pass -o - for stdout", "writing the trace: %w", err)
		}
		defer f.Close()
		w = f
	}
	a, err := trace.NewAppender(w, true, since, o.comment())
	if err != nil {
		return err
	}
	for _, r := range rec.Rows {
		if err := a.Append(r.Job, r.At); err != nil {
			return err
		}
	}
	rec.Summary.Render(o.ErrOut, 20)
	if o.output != "-" {
		fmt.Fprintf(o.ErrOut, "Wrote %s to %s.\n", words.Count(len(rec.Rows), "row"), o.output)
	}
	return nil
}

// comment is the line a recording starts with: what wrote it, and when.
func (o *recordOptions) comment() string {
	return fmt.Sprintf("berth record, %s", o.clock().UTC().Format(time.RFC3339))
}

// readCluster lists what a recording reads: Jobs, their pods, GPU
// services, namespaces, Kueue's Workloads where Kueue is installed, and
// events about Jobs. Workloads and events the credentials may not list
// are said and left out.
func readCluster(ctx context.Context, t *target, errOut io.Writer) (*record.Cluster, error) {
	kube := t.client.Kube
	var c record.Cluster
	unreachable := func(what string, err error) error {
		return problem.Errorf("check the cluster is reachable and that your credentials may list "+what+" in every namespace", "listing %s: %w", what, err)
	}
	jobs, err := kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, unreachable("Jobs", err)
	}
	c.Jobs = jobs.Items
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: batchv1.ControllerUidLabel})
	if err != nil {
		return nil, unreachable("pods", err)
	}
	c.Pods = pods.Items
	deps, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, unreachable("Deployments", err)
	}
	c.Deployments = deps.Items
	sets, err := kube.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, unreachable("StatefulSets", err)
	}
	c.StatefulSets = sets.Items
	if nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		c.Namespaces = nss.Items
	} else if !apierrors.IsForbidden(err) {
		return nil, unreachable("namespaces", err)
	}
	events, err := kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Job"})
	switch {
	case err == nil:
		c.Events = events.Items
	case apierrors.IsForbidden(err):
		fmt.Fprintln(errOut, "warning: events may not be listed with these credentials: Jobs already deleted cannot be counted")
	default:
		return nil, unreachable("events", err)
	}
	c.Workloads, err = kueueWorkloads(ctx, t)
	if err != nil {
		fmt.Fprintf(errOut, "warning: Kueue's Workloads could not be read (%v): admissions are not summed\n", err)
	}
	return &c, nil
}

// kueueWorkloads lists Kueue's Workloads in the first version the
// cluster serves; none where Kueue is not installed.
func kueueWorkloads(ctx context.Context, t *target) ([]unstructured.Unstructured, error) {
	for _, v := range record.KueueVersions {
		gvr := schema.GroupVersionResource{Group: record.KueueGroup, Version: v, Resource: "workloads"}
		list, err := t.client.Dynamic.Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	return nil, nil
}

// signalContext is ctx, ended by Ctrl-C or SIGTERM as well.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}
