package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/scaffold"
	"berth.io/berth/internal/words"
)

type importOptions struct {
	Streams
	teamMap     []string
	defaultTeam string
	from, to    string
	length      time.Duration
	maxGPUs     int64
	kind        string
	checkpoint  time.Duration
	output      string

	opts trace.ImportOptions
}

// newRehearseImportCommand turns a public GPU trace into berth's trace
// format: `berth rehearse import alibaba|philly|openb`.
func newRehearseImportCommand(s Streams) *cobra.Command {
	o := &importOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "import alibaba JOB_TABLE TASK_TABLE | import philly CLUSTER_JOB_LOG | import openb POD_LIST",
		Short: "Turn a public GPU trace (Alibaba cluster-trace-gpu-v2020 or v2023, Microsoft Philly) into a berth trace",
		Long: `Read a public GPU cluster trace in its published layout and write berth's trace
(CSV) for berth rehearse:

  alibaba  pai_job_table.csv and pai_task_table.csv of cluster-trace-gpu-v2020: a job
           per task, the user as team, plan_gpu (percent of a GPU) rounded up to whole
           GPUs per pod, run time from start to end
  philly   cluster_job_log of Microsoft's Philly trace: the virtual cluster (vc) as
           team, a pod per machine, run time the sum of its attempts
  openb    an openb_pod_list_*.csv of cluster-trace-gpu-v2023: a job of one pod per
           pod, the QoS class (LS, BE, ...) as team, num_gpu GPUs (a GPU-sharing
           pod's gpu_milli rounded up to a whole GPU), run time from scheduled to
           deleted; each pod's recorded wait (scheduled less created) goes to
           TRACE.waits.csv beside -o TRACE.csv

Owners become teams through --team-map OWNER=TEAM (repeatable); jobs of other owners
go to --default-team, or are dropped. --from, and --to or --for, keep a window of the
source's time: dates (RFC 3339) for alibaba and philly, offsets from the trace's start
(48h) for openb, whose times are offsets. --max-gpus drops jobs whose pods ask more.
What was kept, dropped and rounded is reported on stderr.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 0 && args[0] == "alibaba" && len(args) == 3:
			case len(args) > 0 && args[0] == "philly" && len(args) == 2:
			case len(args) > 0 && args[0] == "openb" && len(args) == 2:
			default:
				return problem.New("run `berth rehearse import alibaba pai_job_table.csv pai_task_table.csv`, `berth rehearse import philly cluster_job_log` or `berth rehearse import openb openb_pod_list_default.csv`", "berth rehearse import takes a source and its files")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(args[0]); err != nil {
				return err
			}
			return o.run(args)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.teamMap, "team-map", nil, "map a trace's owner to a blueprint team, as OWNER=TEAM (repeatable)")
	f.StringVar(&o.defaultTeam, "default-team", "", "the team of owners --team-map does not name (default: drop their jobs)")
	f.StringVar(&o.from, "from", "", "keep jobs submitted at or after this time (RFC 3339; for openb an offset from the trace's start, e.g. 48h)")
	f.StringVar(&o.to, "to", "", "keep jobs submitted before this time (RFC 3339; for openb an offset)")
	f.DurationVar(&o.length, "for", 0, "keep jobs submitted within this long from --from (e.g. 24h), in place of --to")
	f.Int64Var(&o.maxGPUs, "max-gpus", 0, "drop jobs whose pods ask more GPUs than this, each (default no cap)")
	f.StringVar(&o.kind, "kind", "training", "the kind of every imported job: training or batch")
	f.DurationVar(&o.checkpoint, "checkpoint", 0, "every imported job's checkpoint interval (default none)")
	f.StringVarP(&o.output, "output", "o", "-", "where to write the trace (- for stdout)")
	return cmd
}

func (o *importOptions) complete(source string) error {
	o.opts = trace.ImportOptions{TeamMap: map[string]string{}, DefaultTeam: o.defaultTeam, Checkpoint: o.checkpoint, Kind: scaffold.Kind(o.kind), For: o.length, MaxGPUs: o.maxGPUs}
	for _, m := range o.teamMap {
		owner, team, ok := strings.Cut(m, "=")
		if !ok || owner == "" || team == "" {
			return problem.Errorf("e.g. --team-map vc1=team-a", "--team-map %q is not OWNER=TEAM", m)
		}
		o.opts.TeamMap[owner] = team
	}
	if o.opts.Kind != scaffold.Training && o.opts.Kind != scaffold.Batch {
		return problem.Errorf("pass --kind training or --kind batch", "--kind %q: imported jobs are Jobs", o.kind)
	}
	if o.maxGPUs < 0 {
		return problem.Errorf("pass --max-gpus 1 or more, or leave it out for no cap", "--max-gpus %d is negative", o.maxGPUs)
	}
	switch {
	case o.length < 0:
		return problem.Errorf("pass --for a length such as 24h", "--for %s is negative", o.length)
	case o.length > 0 && o.to != "":
		return problem.New("pass --to or --for, not both", "--to and --for both end the window")
	case o.length > 0 && o.from == "" && source != "openb":
		return problem.Errorf("pass --from too, e.g. --from 2020-07-01T00:00:00Z --for 24h", "--for is the window's length from --from, and %s's times are dates", source)
	}
	if source == "openb" {
		return o.completeOffsets()
	}
	for _, t := range []struct {
		flag, value string
		into        *time.Time
	}{{"--from", o.from, &o.opts.From}, {"--to", o.to, &o.opts.To}} {
		if t.value == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339, t.value)
		if err != nil {
			return problem.Errorf("write it as RFC 3339, e.g. 2020-07-01T00:00:00Z", "%s %q is not a time", t.flag, t.value)
		}
		*t.into = v
	}
	return nil
}

// completeOffsets reads --from and --to as offsets from the trace's
// start, openb's times.
func (o *importOptions) completeOffsets() error {
	var to time.Duration
	for _, t := range []struct {
		flag, value string
		into        *time.Duration
	}{{"--from", o.from, &o.opts.Offset}, {"--to", o.to, &to}} {
		if t.value == "" {
			continue
		}
		v, err := time.ParseDuration(t.value)
		if err != nil || v < 0 {
			return problem.Errorf("openb's times are offsets from the trace's start: write it as a duration, e.g. 48h", "%s %q is not an offset", t.flag, t.value)
		}
		*t.into = v
	}
	if o.to != "" {
		if to <= o.opts.Offset {
			return problem.Errorf("pass a --to after --from, or --for", "--to %s is not after --from %s: the window is empty", o.to, words.Duration(o.opts.Offset))
		}
		o.opts.For = to - o.opts.Offset
	}
	return nil
}

func (o *importOptions) run(args []string) error {
	open := func(path string) (*os.File, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, problem.Errorf("check the path to the trace's file", "%w", err)
		}
		return f, nil
	}
	var (
		t   *trace.Trace
		rep trace.ImportReport
	)
	switch args[0] {
	case "alibaba":
		jobs, err := open(args[1])
		if err != nil {
			return err
		}
		defer jobs.Close()
		tasks, err := open(args[2])
		if err != nil {
			return err
		}
		defer tasks.Close()
		if t, rep, err = trace.ImportAlibaba(jobs, tasks, args[1], args[2], o.opts); err != nil {
			return err
		}
	case "philly":
		log, err := open(args[1])
		if err != nil {
			return err
		}
		defer log.Close()
		if t, rep, err = trace.ImportPhilly(log, args[1], o.opts); err != nil {
			return err
		}
	case "openb":
		pods, err := open(args[1])
		if err != nil {
			return err
		}
		defer pods.Close()
		if t, rep, err = trace.ImportOpenB(pods, args[1], o.opts); err != nil {
			return err
		}
	}
	var w io.Writer = o.Out
	if o.output != "-" {
		f, err := os.Create(o.output)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if err := trace.Write(w, t); err != nil {
		return err
	}
	waits, err := o.writeWaits(t)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "%s: %s%s\n", args[0], rep, waits)
	return nil
}

// writeWaits writes the source's recorded waits beside the trace, and
// says where for the summary: "" when the source records none.
func (o *importOptions) writeWaits(t *trace.Trace) (string, error) {
	if len(t.RecordedWaits) == 0 {
		return "", nil
	}
	if o.output == "-" {
		return "; recorded waits not kept (-o - writes the trace alone; pass -o TRACE.csv for TRACE.waits.csv)", nil
	}
	path := trace.WaitsPath(o.output)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := trace.WriteWaits(f, t); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return "; recorded waits in " + path, nil
}
