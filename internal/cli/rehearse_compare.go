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
and the seed, and says where they differ.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return problem.New("run `berth rehearse compare A/report.json B/report.json` (or the two --report directories)", "berth rehearse compare takes two reports")
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
