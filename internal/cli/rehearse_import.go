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
)

type importOptions struct {
	Streams
	teamMap     []string
	defaultTeam string
	from, to    string
	kind        string
	checkpoint  time.Duration
	output      string

	opts trace.ImportOptions
}

// newRehearseImportCommand turns a public GPU trace into berth's trace
// format: `berth rehearse import alibaba|philly`.
func newRehearseImportCommand(s Streams) *cobra.Command {
	o := &importOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "import alibaba JOB_TABLE TASK_TABLE | import philly CLUSTER_JOB_LOG",
		Short: "Turn a public GPU trace (Alibaba cluster-trace-gpu-v2020, Microsoft Philly) into a berth trace",
		Long: `Read a public GPU cluster trace in its published layout and write berth's trace
(CSV) for berth rehearse:

  alibaba  pai_job_table.csv and pai_task_table.csv of cluster-trace-gpu-v2020: a job
           per task, the user as team, plan_gpu (percent of a GPU) rounded up to whole
           GPUs per pod, run time from start to end
  philly   cluster_job_log of Microsoft's Philly trace: the virtual cluster (vc) as
           team, a pod per machine, run time the sum of its attempts

Owners become teams through --team-map OWNER=TEAM (repeatable); jobs of other owners
go to --default-team, or are dropped. --from and --to keep a window of the source's
time. What was kept, dropped and rounded is reported on stderr.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 0 && args[0] == "alibaba" && len(args) == 3:
			case len(args) > 0 && args[0] == "philly" && len(args) == 2:
			default:
				return problem.New("run `berth rehearse import alibaba pai_job_table.csv pai_task_table.csv` or `berth rehearse import philly cluster_job_log`", "berth rehearse import takes a source and its files")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			return o.run(args)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.teamMap, "team-map", nil, "map a trace's owner to a blueprint team, as OWNER=TEAM (repeatable)")
	f.StringVar(&o.defaultTeam, "default-team", "", "the team of owners --team-map does not name (default: drop their jobs)")
	f.StringVar(&o.from, "from", "", "keep jobs submitted at or after this time (RFC 3339)")
	f.StringVar(&o.to, "to", "", "keep jobs submitted before this time (RFC 3339)")
	f.StringVar(&o.kind, "kind", "training", "the kind of every imported job: training or batch")
	f.DurationVar(&o.checkpoint, "checkpoint", 0, "every imported job's checkpoint interval (default none)")
	f.StringVarP(&o.output, "output", "o", "-", "where to write the trace (- for stdout)")
	return cmd
}

func (o *importOptions) complete() error {
	o.opts = trace.ImportOptions{TeamMap: map[string]string{}, DefaultTeam: o.defaultTeam, Checkpoint: o.checkpoint, Kind: scaffold.Kind(o.kind)}
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
	fmt.Fprintf(o.ErrOut, "%s: %s\n", args[0], rep)
	return nil
}
