package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/problem"
)

type applyOptions struct {
	Streams
	kube           *kubeFlags
	file           string
	prune          bool
	dryRun         bool
	forceConflicts bool
	drainTimeout   time.Duration
}

func newApplyCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &applyOptions{Streams: s, kube: kube}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Make the cluster match the blueprint",
		Long: `Plan as ` + "`berth plan`" + ` does, show the plan, and carry it out with
server-side apply (field manager "berth") in dependency order. A second
apply of the same blueprint writes nothing.

Pools change only on a berth local cluster: nodes are added, updated in
place, or drained through the Eviction API and removed. A change no cloud
makes in place (taints, machine, mode, spot, zones) is a blue/green
replacement. An apply that stops part-way (interrupted, or a disruption
budget holding a drain past --drain-timeout) leaves the cluster serving,
and running apply again finishes the job.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.Run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "blueprint file")
	f.BoolVar(&o.prune, "prune", false, "delete berth's objects and pools that left the blueprint")
	f.BoolVar(&o.dryRun, "dry-run", false, "send every write as a server-side dry run: validated and admitted, never stored")
	f.BoolVar(&o.forceConflicts, "force-conflicts", false, "take over fields another field manager owns")
	f.DurationVar(&o.drainTimeout, "drain-timeout", 5*time.Minute, "how long a disruption budget may hold back a drain before apply stops")
	return cmd
}

func (o *applyOptions) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The blueprint first: its problems need no cluster to report.
	bp, err := planBlueprint(o.file, o.kube.contextName(), func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		return err
	}
	t, err := o.kube.connect(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	mode := ""
	if o.dryRun {
		mode = " (server-side dry run: nothing is stored)"
	}
	opts := apply.RunOptions{
		Plan: apply.Options{Prune: o.prune, ForceConflicts: o.forceConflicts},
		Exec: apply.ExecOptions{DryRun: o.dryRun, Progress: o.Out, DrainTimeout: o.drainTimeout},
		Show: func(plan *apply.Plan) {
			fmt.Fprintf(o.Out, "Applying blueprint %s (%s) to %s%s\n\n", bp.Blueprint.Metadata.Name, bp.source, t, mode)
			plan.Render(o.Out)
			guardrailNote(o.Out, bp.Blueprint)
			if !plan.Empty() {
				fmt.Fprintln(o.Out)
			}
		},
	}
	if opts.Plan.Owned, err = ownedObjects(bp.Blueprint); err != nil {
		return err
	}
	plan, err := apply.Run(ctx, t.client, bp.Blueprint, opts)
	switch {
	case errors.Is(err, apply.ErrGuardrailsPending):
		// A policy is enforced a moment after it is written; what is
		// created before then is admitted without it.
		fmt.Fprintf(o.ErrOut, "warning: %v\nThe policies are stored; objects created until the API server enforces them are admitted without them.\n", err)
	case err != nil && ctx.Err() != nil && plan != nil:
		return problem.Errorf("run `berth apply` again; it carries on from what the cluster holds now", "apply interrupted: %w", err)
	case err != nil:
		return err
	case plan.Empty():
		return nil
	case !o.dryRun && plan.ChangesGuardrails():
		fmt.Fprintf(o.Out, "Guardrails in force (%.1fs).\n", time.Since(start).Seconds())
	}
	fmt.Fprintf(o.Out, "\nDone in %.1fs.\n", time.Since(start).Seconds())
	return nil
}

// guardrailNote says what a blueprint whose guardrails only warn or audit
// leaves open: the policies are then advice, and only what Kubernetes
// enforces natively (quotas, including the team's class quota) refuses.
func guardrailNote(w io.Writer, bp *v1alpha1.Blueprint) {
	switch bp.Spec.Guardrails {
	case v1alpha1.GuardrailsWarn, v1alpha1.GuardrailsAudit:
		fmt.Fprintf(w, "\nnote: guardrails are %s: the admission policies admit what breaks the design (with a warning or an audit record). Still refused natively: team quotas, and each team namespace's class quota (classes it may not use, and system-cluster-critical and system-node-critical). Not refused: namespaces outside the blueprint running at any priority (system-* and the blueprint's classes included), GPU tolerations from namespaces without GPUs, pods on the System pool, spec.nodeName. Set spec.guardrails: Enforce to refuse them.\n", bp.Spec.Guardrails)
	}
}
