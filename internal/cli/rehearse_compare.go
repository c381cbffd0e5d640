package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/rehearse/report"
)

type compareOptions struct {
	Streams
	output    string
	reportDir string
}

func newRehearseCompareCommand(s Streams) *cobra.Command {
	o := &compareOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Print two rehearsals of the same trace side by side, from their reports",
		Long: `Print two rehearsals of the same trace side by side, as --vs does, from the reports
they wrote: each a report.json, the directory --report DIR wrote, or what -o json
printed.

--vs rehearses the two designs one after the other. On a machine with a core to spare
for each, rehearse them at once, each in its own process, and compare them after:

  berth rehearse -f berth.yaml --trace week.csv --report reports/quota &
  berth rehearse -f berth.yaml --trace week.csv --queueing Kueue --report reports/kueue &
  wait
  berth rehearse compare reports/quota reports/kueue --report reports/quota-vs-kueue

The two must have replayed the same trace with the same --seed; berth checks the jobs
and the seed, and says where they differ.

Two sets of replications (each the --report DIR of a --repeat N run, its
figures.json, or its -o json output) compare seed by seed, as --repeat with --vs
would: each figure's paired difference, its 95% interval and a verdict.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return problem.New("run `berth rehearse compare A/report.json B/report.json` (or the two --report directories)", "berth rehearse compare takes two reports, or two sets of replications")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != "table" && o.output != "json" {
				return problem.Errorf("pass -o table or -o json", "-o %q: unknown output", o.output)
			}
			return o.run(args[0], args[1])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "table", "table or json")
	f.StringVar(&o.reportDir, "report", "", "also write the two side by side as report.json and report.html to this directory")
	return cmd
}

func (o *compareOptions) run(pathA, pathB string) error {
	setA, okA, err := report.ReadReplications(pathA)
	if err != nil {
		return err
	}
	setB, okB, err := report.ReadReplications(pathB)
	if err != nil {
		return err
	}
	if okA != okB {
		return problem.Errorf("compare two rehearsals, or two sets of replications (--repeat N --report DIR), not one of each",
			"%s holds %s and %s holds %s", pathA, what(okA), pathB, what(okB))
	}
	if okA {
		return o.runSets(setA, setB)
	}
	a, err := report.Read(pathA)
	if err != nil {
		return err
	}
	b, err := report.Read(pathB)
	if err != nil {
		return err
	}
	if err := report.Comparable(a, b); err != nil {
		return err
	}
	for _, w := range report.Uneven(a, b) {
		fmt.Fprintf(o.ErrOut, "warning: %s\n", w)
	}
	return writeBoth(o.Out, o.output, o.reportDir, a, b)
}

func what(set bool) string {
	if set {
		return "a set of replications"
	}
	return "one rehearsal"
}

// runSets compares two sets of replications seed by seed, as --repeat
// with --vs would have: the seeds both ran, each pair checked as
// comparable.
func (o *compareOptions) runSets(a, b []*report.Report) error {
	bySeed := map[int64]*report.Report{}
	for _, r := range b {
		bySeed[r.Seed] = r
	}
	var pa, pb []*report.Report
	var only []int64
	for _, r := range a {
		other := bySeed[r.Seed]
		if other == nil {
			only = append(only, r.Seed)
			continue
		}
		if err := report.Comparable(r, other); err != nil {
			return fmt.Errorf("seed %d: %w", r.Seed, err)
		}
		pa, pb = append(pa, r), append(pb, other)
	}
	if len(pa) == 0 {
		return problem.New("rehearse both designs with the same --seed and --repeat", "the two sets of replications share no seed")
	}
	if len(only) > 0 {
		fmt.Fprintf(o.ErrOut, "warning: seeds %v ran in A only; the comparison is over the %d seeds both ran\n", only, len(pa))
	}
	return writeReplications(o.Out, o.output, o.reportDir, [][]*report.Report{pa, pb})
}
