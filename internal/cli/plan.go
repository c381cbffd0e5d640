package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/problem"
)

// Exit codes of `berth plan`, as terraform's -detailed-exitcode.
const (
	planNoChanges = 0
	planError     = 1
	planChanges   = 2
)

type planOptions struct {
	Streams
	kube           *kubeFlags
	file           string
	prune          bool
	forceConflicts bool
}

func newPlanCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &planOptions{Streams: s, kube: kube}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what `berth apply` would change, object by object and field by field",
		Long: `Compare the cluster with the blueprint and show what apply would do:
create, update (field by field, as a server-side dry run computes it),
replace (fields that cannot change in place), delete (with --prune), and
per pool on a berth local cluster: create, resize, update, or a blue/green
replacement. Nothing is changed.

Exit status: 0 no changes, 2 changes, 1 an error or a change apply could
not make (a conflict with another field manager, a blocked pool).

The blueprint is -f FILE, else ./berth.yaml, else for a berth local cluster
the one it was started from, else the retail template.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.Run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "blueprint file")
	f.BoolVar(&o.prune, "prune", false, "also plan deleting berth's objects and pools that left the blueprint")
	f.BoolVar(&o.forceConflicts, "force-conflicts", false, "plan as if taking over fields another manager owns")
	return cmd
}

func (o *planOptions) Run(ctx context.Context) error {
	// The blueprint first: its problems need no cluster to report.
	bp, err := planBlueprint(o.file, o.kube.contextName(), func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		return err
	}
	t, err := o.kube.connect(ctx)
	if err != nil {
		return err
	}
	plan, err := computePlan(ctx, t, bp.Blueprint, apply.Options{Prune: o.prune, ForceConflicts: o.forceConflicts})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Plan for blueprint %s (%s) on %s\n\n", bp.Blueprint.Metadata.Name, bp.source, t)
	plan.Render(o.Out)
	guardrailNote(o.Out, bp.Blueprint)
	switch {
	case len(plan.Problems()) > 0:
		return &ExitError{Code: planError, Err: fmt.Errorf("apply would stop on %d problem(s), shown above", len(plan.Problems()))}
	case plan.Empty():
		return nil
	default:
		return &ExitError{Code: planChanges}
	}
}
