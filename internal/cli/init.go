package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/problem"
)

type initOptions struct {
	Streams
	template string
	file     string // "-" writes to standard output
	force    bool
}

func newInitCommand(s Streams) *cobra.Command {
	o := &initOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a starting blueprint (the seeds' retail cluster by default)",
		Long: "Write a starting blueprint to FILE (default berth.yaml; - for standard output).\n\n" +
			"Templates: " + strings.Join(blueprint.TemplateNames(), ", ") + ".",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = "berth.yaml"
			if len(args) == 1 {
				o.file = args[0]
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVar(&o.template, "template", blueprint.DefaultTemplate, "starting point: "+strings.Join(blueprint.TemplateNames(), " or "))
	cmd.Flags().BoolVar(&o.force, "force", false, "overwrite FILE if it exists")
	return cmd
}

func (o *initOptions) Run() error {
	data, err := blueprint.Template(o.template)
	if err != nil {
		return err
	}
	if o.file == "-" {
		_, err := o.Out.Write(data)
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if o.force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(o.file, flags, 0o644)
	if errors.Is(err, os.ErrExist) {
		return problem.Errorf("pass another FILE, or --force to replace it", "%s already exists; berth will not overwrite it", o.file)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "wrote %s (template %s)\nnext: berth validate %s && berth up -f %s\n", o.file, o.template, o.file, o.file)
	return nil
}
