package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/export"
	"berth.io/berth/internal/problem"
)

type exportOptions struct {
	Streams
	file   string
	target string
	output string
}

func newExportCommand(s Streams) *cobra.Command {
	o := &exportOptions{Streams: s}
	var names []string
	for _, t := range export.Targets() {
		names = append(names, string(t))
	}
	cmd := &cobra.Command{
		Use:   "export --target " + strings.Join(names, "|"),
		Short: "Write the blueprint as the artifacts a cloud's own tools consume",
		Long: `Write the blueprint for another tool:

  aks        az aks nodepool add commands and the cluster autoscaler
             profile (a bash script)
  eks        an eksctl ClusterConfig with managed node groups and the
             cluster-autoscaler tags scale-from-zero needs; Cluster
             Autoscaler's arguments in its header
  gke        gcloud container node-pools create commands and the
             autoscaling profile (a bash script)
  karpenter  Karpenter NodePools
  manifests  every Kubernetes object berth applies, for GitOps

Machines map to each cloud's instance types through machine.instanceTypes,
else berth's catalog, and spec.autoscaler to what each target takes of it
(see docs/commands/export.md). Nothing is written unless the whole
blueprint can be expressed; what a target cannot express is an error or a
comment in the output, never silently dropped. No cluster is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.Run() },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "blueprint file (default ./berth.yaml, else the retail template)")
	f.StringVarP(&o.target, "target", "t", "", "what to write: "+strings.Join(names, ", "))
	f.StringVarP(&o.output, "output", "o", "", "file to write (default standard output)")
	cmd.MarkFlagRequired("target")
	return cmd
}

func (o *exportOptions) Run() error {
	target, err := export.ParseTarget(o.target)
	if err != nil {
		return err
	}
	bp, err := loadBlueprint(o.file, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := export.Export(&b, bp.Blueprint, target); err != nil {
		return fmt.Errorf("exporting %s for %s: %w", bp.source, target, err)
	}
	if o.output == "" {
		_, err := fmt.Fprint(o.Out, b.String())
		return err
	}
	mode := os.FileMode(0o644)
	if target == export.AKS || target == export.GKE {
		mode = 0o755
	}
	if err := os.WriteFile(o.output, []byte(b.String()), mode); err != nil {
		return fmt.Errorf("writing %s: %w", o.output, err)
	}
	fmt.Fprintf(o.ErrOut, "wrote %s (%s, from %s)\n", o.output, target, bp.source)
	return nil
}
