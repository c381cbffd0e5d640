package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/scaffold"
)

type newOptions struct {
	Streams
	file  string // the blueprint
	dir   string // "" writes to standard output
	force bool
	o     scaffold.Options
}

func newNewCommand(s Streams) *cobra.Command {
	o := &newOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "new inference|training|batch NAME --team TEAM",
		Short: "Write the manifests of a new workload, following the blueprint's classes",
		Long: `Write the manifests of a new workload as the blueprint wants it:

  inference  a Deployment, a Service, an HPA on the class's metric (requests
             per second or GPU utilization as a Pods metric, else CPU), and
             a PodDisruptionBudget unless the class gives one
  training   a Job (restartPolicy Never, backoffLimit 4) and a
             checkpoint PersistentVolumeClaim mounted at /checkpoints
  batch      with a queue (the class's scaling.queue, else --queue URL): a
             Deployment and an HPA on the queue's depth from 0 replicas
             (--scaler keda: a KEDA ScaledObject instead); without one, a
             Deployment at 0 replicas to scale by hand

The class is the first of the kind's role (Serving, Training, General) the
team may use, or --class; for batch, the first of them with a queue (or,
with --queue, without one of its own), among those with pools for the
pods' GPUs: with --gpus N a class with a GPU pool, with --gpus 0 one with
a pool without GPUs. berth new says which and why. Without --gpus, a
class whose pools all have GPUs gets 1 GPU per pod. The objects go in the team's first namespace, in DIR/NAME-KIND.yaml
with -o, else to standard output. No cluster is needed.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.o.Kind, o.o.Name = scaffold.Kind(args[0]), args[1]
			o.o.GPUsGiven = cmd.Flags().Changed("gpus")
			return o.Run()
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "blueprint file (default ./berth.yaml, else the retail template)")
	f.StringVarP(&o.dir, "output", "o", "", "directory to write NAME-KIND.yaml in (default standard output)")
	f.BoolVar(&o.force, "force", false, "overwrite the file if it exists")
	f.StringVar(&o.o.Team, "team", "", "the team that owns the workload (required)")
	f.StringVar(&o.o.Class, "class", "", "the class (default the first of the kind's role the team may use; for batch, with a queue)")
	f.StringVar(&o.o.Model, "model", "", "inference: the model it serves, NAME@ALIAS or NAME:VERSION (the berth.io/model annotation)")
	f.IntVar(&o.o.GPUs, "gpus", 0, "GPUs per pod (default 1 on a class whose pools all have GPUs, else none)")
	f.StringVar(&o.o.Queue, "queue", "", "batch: the queue URL the worker reads (QUEUE_URL) and scales on: amqp://HOST/QUEUE, kafka://BROKERS/TOPIC[?group=G], https://sqs.REGION.amazonaws.com/ACCOUNT/QUEUE or sqs://REGION/QUEUE")
	f.StringVar((*string)(&o.o.Scaler), "scaler", string(scaffold.ScalerHPA), "batch with a queue: what scales it, hpa (an HPA on the queue's depth metric) or keda (a KEDA ScaledObject)")
	f.StringVar(&o.o.Image, "image", "", "container image (default a placeholder to replace)")
	f.StringVar(&o.o.StorageClass, "storage-class", "", "training: the storage class of the checkpoint claim (default the blueprint's default class)")
	_ = cmd.MarkFlagRequired("team")
	return cmd
}

func (o *newOptions) Run() error {
	bp, err := loadBlueprint(o.file, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
	if err != nil {
		return err
	}
	s, err := scaffold.New(bp.Blueprint, o.o)
	if err != nil {
		return fmt.Errorf("%s: %w", bp.source, err)
	}
	data, err := scaffold.Render(s.Objects)
	if err != nil {
		return err
	}
	chosen := fmt.Sprintf("class %s: %s", s.Class.Name, s.Why)
	if o.dir == "" {
		// Standard output is the manifests alone, to pipe to kubectl.
		fmt.Fprintln(o.ErrOut, chosen)
		_, err := o.Out.Write(data)
		return err
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.dir, scaffold.File(o.o))
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if o.force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	file, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, os.ErrExist) {
		return problem.Errorf("pass another -o, or --force to replace it", "%s already exists; berth will not overwrite it", path)
	}
	if err != nil {
		return err
	}
	if _, err := file.Write(data); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "wrote %s (%s %s in namespace %s)\n%s\nnext: %s && kubectl apply -f %s\n",
		path, o.o.Kind, o.o.Name, s.Namespace, chosen, auditAdvice(bp, path), path)
	return nil
}

// auditAdvice is the berth audit command that checks path beside the
// blueprint bp, as audit finds a blueprint: -f, else ./berth.yaml. A
// built-in template is written to ./berth.yaml first, so that the audit
// counts the team's quota, LimitRange and budgets as the cluster will
// have them.
func auditAdvice(bp *loadedBlueprint, path string) string {
	switch {
	case bp.template != "":
		return fmt.Sprintf("berth init --template %s %s && berth audit %s", bp.template, defaultBlueprintFile, path)
	case bp.source == defaultBlueprintFile:
		return "berth audit " + path
	}
	return fmt.Sprintf("berth audit -f %s %s", bp.source, path)
}
