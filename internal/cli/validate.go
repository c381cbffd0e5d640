package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/words"
)

type validateOptions struct {
	Streams
	file string
}

func newValidateCommand(s Streams) *cobra.Command {
	o := &validateOptions{Streams: s}
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a blueprint; print every problem as FILE:LINE: field: message, exit 1 if any",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			return o.Run()
		},
	}
}

func (o *validateOptions) Run() error {
	bp, warnings, err := blueprint.Load(o.file)
	var bad *blueprint.Error
	if errors.As(err, &bad) {
		for _, p := range bad.Problems {
			fmt.Fprintln(o.Out, p)
		}
		errCount := 0
		for _, p := range bad.Problems {
			if !p.Warning {
				errCount++
			}
		}
		return &ExitError{Code: 1, Err: fmt.Errorf("%s: %s", o.file, words.Count(errCount, "problem"))}
	}
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	for _, p := range warnings {
		fmt.Fprintln(o.Out, p)
	}
	fmt.Fprintf(o.Out, "%s: blueprint %q is valid (%d pools, %d teams, %d classes)\n",
		o.file, bp.Metadata.Name, len(bp.Spec.Pools), len(bp.Spec.Teams), len(bp.Spec.Classes))
	return nil
}
