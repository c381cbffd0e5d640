package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/metadata"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/audit"
	"berth.io/berth/internal/problem"
)

type auditOptions struct {
	Streams
	kube       *kubeFlags
	paths      []string
	output     string
	file       string
	namespaces []string
	system     []string
	ignore     []string
	failOn     string
}

func newAuditCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &auditOptions{Streams: s, kube: kube}
	var formats []string
	for _, f := range audit.Formats() {
		formats = append(formats, string(f))
	}
	cmd := &cobra.Command{
		Use:   "audit [PATH...]",
		Short: "Check a cluster, or manifests, against the design",
		Long: `Check a live cluster (no PATH) or manifest files and directories against
berth's design: GPU limits, taints and quotas, LimitRanges, priorities,
disruption budgets, zone spread, device plugins, autoscaling and model
artifacts. Every finding names the rule, the object, the field (and the
file and line), what is wrong and the fix; docs/reference/audit-rules.md lists the rules.

PATH is a file or directory of multi-document YAML or JSON: manifests,
Lists such as ` + "`kubectl get -o json`" + ` writes, or rendered Helm or kustomize
output ("-" reads stdin). A cluster is read whole, or with -n only those
namespaces (nodes and PriorityClasses are always read).

With -f BLUEPRINT (else ./berth.yaml when there is one; for a cluster,
else the blueprint it recorded at berth up or berth apply), system
namespaces and GPU taints come from the blueprint. Files are
audited as they will run beside the blueprint's own objects (its team
namespaces, quotas, LimitRanges, budgets and PriorityClasses, which
berth apply makes); on a cluster audit also reports drift from it.

Exit status: 0 when no error-level finding remains, 1 otherwise, so it
can gate CI (--fail-on warning fails on warnings too). Leave a rule out
everywhere with --ignore RULE, or for one object with its annotation
` + v1alpha1.AnnotationAuditIgnore + `: "RULE, RULE".`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths = args
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", string(audit.Table), "report format: "+strings.Join(formats, ", "))
	f.StringVarP(&o.file, "file", "f", "", "blueprint to take system namespaces, GPU taints and (for files) the team namespaces' objects from, and to report a cluster's drift against (files: default ./berth.yaml)")
	f.StringSliceVarP(&o.namespaces, "namespace", "n", nil, "audit only these namespaces of the cluster (repeatable)")
	f.StringSliceVar(&o.system, "system-namespace", nil, "more namespaces that run cluster add-ons (kube-system, kube-public and kube-node-lease always do)")
	f.StringSliceVar(&o.ignore, "ignore", nil, "rule IDs to leave out (repeatable)")
	f.StringVar(&o.failOn, "fail-on", string(audit.Error), "lowest severity that fails the audit: error or warning")
	return cmd
}

func (o *auditOptions) Run(ctx context.Context) error {
	format, err := audit.ParseFormat(o.output)
	if err != nil {
		return err
	}
	for _, id := range o.ignore {
		if _, ok := audit.RuleByID(id); !ok {
			var ids []string
			for _, r := range audit.Rules {
				ids = append(ids, r.ID)
			}
			return problem.Errorf(fmt.Sprintf("use one of %s", strings.Join(ids, ", ")), "--ignore %s: no such rule", id)
		}
	}
	if o.failOn != string(audit.Error) && o.failOn != string(audit.Warning) {
		return fmt.Errorf("--fail-on %s: use error or warning", o.failOn)
	}
	opts := audit.Options{SystemNamespaces: o.system, Ignore: o.ignore}
	warn := func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) }

	var (
		bp    *loadedBlueprint
		inv   *audit.Inventory
		drift []audit.Finding
	)
	if len(o.paths) > 0 {
		if len(o.namespaces) > 0 {
			return problem.New("drop -n, or audit only the files of those namespaces", "-n selects namespaces of a cluster; with files, audit every object they hold")
		}
		if bp, err = o.filesBlueprint(warn); err != nil {
			return err
		}
		if bp != nil {
			opts.UseBlueprint(bp.Blueprint)
			// Files join the blueprint's cluster, where apply makes its
			// own objects; a cluster is audited for what it holds.
			opts.Present = audit.BlueprintObjects(bp.Blueprint)
		}
		opts.Source = strings.Join(o.paths, ", ")
		if inv, err = audit.LoadFiles(o.paths, o.In); err != nil {
			return err
		}
	} else {
		t, err := o.kube.connect(ctx)
		if err != nil {
			return err
		}
		if bp, err = clusterBlueprint(ctx, t.client.Kube, o.file, warn); err != nil {
			return err
		}
		if bp != nil {
			opts.UseBlueprint(bp.Blueprint)
			fmt.Fprintf(o.ErrOut, "Auditing against blueprint %s from %s\n", bp.Metadata.Name, bp.source)
		}
		opts.Source = t.String()
		meta, err := metadata.NewForConfig(t.config)
		if err != nil {
			return err
		}
		if inv, err = audit.LoadCluster(ctx, t.client.Kube, t.client.Dynamic, meta, o.namespaces); err != nil {
			return err
		}
		if o.file != "" {
			plan, err := computePlan(ctx, t, bp.Blueprint, apply.Options{})
			if err != nil {
				return fmt.Errorf("comparing the cluster with blueprint %s: %w", o.file, err)
			}
			drift = audit.Drift(plan, o.file)
		}
	}
	report := audit.Check(inv, opts)
	report.Merge(drift)
	if err := audit.Write(o.Out, report, format); err != nil {
		return err
	}
	if len(report.Unread) > 0 {
		fmt.Fprintln(o.ErrOut, problem.Problem{
			Message: "not checked, because the cluster would not let audit list them: " + strings.Join(report.Unread, ", "),
			Fix:     "grant list on them (the view ClusterRole, plus nodes and priorityclasses cluster-wide), or audit with -n only the namespaces you can read",
			Warning: true,
		})
	}
	if report.Errors() > 0 || (o.failOn == string(audit.Warning) && len(report.Findings) > 0) {
		return &ExitError{Code: 1}
	}
	return nil
}

// filesBlueprint is the blueprint files are audited beside: -f, else
// ./berth.yaml (as berth new finds it); nil when neither.
func (o *auditOptions) filesBlueprint(warn func(problem.Problem)) (*loadedBlueprint, error) {
	if o.file != "" {
		return loadBlueprint(o.file, warn)
	}
	if _, err := os.Stat(defaultBlueprintFile); err != nil {
		return nil, nil
	}
	return loadBlueprint(defaultBlueprintFile, warn)
}
