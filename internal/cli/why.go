package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/why"
)

type whyOptions struct {
	Streams
	kube *kubeFlags
	// namespace is -n; allNamespaces is true for --all without -n.
	namespace     string
	allNamespaces bool
	file          string
	output        string
	all           bool
	// kind is "" for a pod, else a workload kind; name the object's.
	kind, name string
}

func newWhyCommand(s Streams, kube *kubeFlags) *cobra.Command {
	o := &whyOptions{Streams: s, kube: kube}
	cmd := &cobra.Command{
		Use:   "why (POD | deployment/NAME | statefulset/NAME | job/NAME | replicaset/NAME | --all) [-n NAMESPACE]",
		Short: "Explain why a pod is Pending, across every layer, with the fix",
		Long: `Explain why a pod is Pending: one verdict with its fix, then what each
layer says. The scheduler's own account is quoted; then berth re-derives,
pool by pool, why the nodes do not fit (cordon, taints, node selector and
affinity, free cpu, memory, GPUs and pods, topology spread), what the
namespace's LimitRange set and its quota allow, whether preemption could
make room (or is off, or blocked by a PodDisruptionBudget), and whether a
pool of the blueprint could grow to hold the pod.

For a workload whose pods were never created (a quota refused them), name
the workload: berth why deployment/NAME. When an HPA scales it and holds
it at zero, at its maximum, or cannot read its metric, the HPA's
conditions say why. --all lists every Pending pod (of -n NAMESPACE, else
of every namespace), every workload that cannot create its pods, and
every HPA at its maximum or without its metric, one line each.

The blueprint (for pool sizes) is -f FILE; else ./berth.yaml, or the one
the cluster recorded (as for berth status), when the cluster's nodes
belong to it. The exit status is 0 whenever a verdict was made.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the pod (default: the kubeconfig context's, else default)")
	f.StringVarP(&o.file, "file", "f", "", "blueprint that describes the cluster's pools")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.BoolVar(&o.all, "all", false, "explain every Pending pod (of -n, else of all namespaces) and every workload that cannot create pods")
	return cmd
}

func (o *whyOptions) Complete(cmd *cobra.Command, args []string) error {
	if !cmd.Flags().Changed("namespace") {
		o.allNamespaces = o.all
		ns, _, err := o.kube.loader().Namespace()
		if err != nil || ns == "" {
			ns = "default"
		}
		o.namespace = ns
	}
	if len(args) == 1 {
		o.name = args[0]
		if kind, name, ok := strings.Cut(args[0], "/"); ok {
			switch k := strings.ToLower(kind); {
			case k == "pod" || k == "pods" || k == "po":
				o.name = name
			case why.WorkloadKinds[k] != "":
				o.kind, o.name = why.WorkloadKinds[k], name
			default:
				return problem.Errorf("name a pod, or one of those workloads", "berth why explains pods and deployment/, statefulset/, job/ or replicaset/ NAME, not %q", kind)
			}
		}
	}
	return nil
}

func (o *whyOptions) Validate(args []string) error {
	switch {
	case o.output != "text" && o.output != "json":
		return fmt.Errorf("-o %s: the output is text or json", o.output)
	case o.all && len(args) > 0:
		return problem.New(fmt.Sprintf("drop %s, or drop --all", args[0]), "--all explains every Pending pod; it takes no POD")
	case !o.all && len(args) == 0:
		return problem.New("berth why POD [-n NAMESPACE], berth why deployment/NAME, or berth why --all", "which pod?")
	case o.name == "" && !o.all:
		return problem.Errorf("berth why POD or KIND/NAME", "%q names no object", args[0])
	}
	return nil
}

func (o *whyOptions) Run(ctx context.Context) error {
	t, err := o.kube.connect(ctx)
	if err != nil {
		return err
	}
	client := t.client.Kube
	bp, source, err := o.blueprint(ctx, client)
	if err != nil {
		return err
	}
	var snap *why.Snapshot
	var result any
	switch {
	case o.all:
		ns := o.namespace
		if o.allNamespaces {
			ns = ""
		}
		if snap, err = why.ReadAll(ctx, client, listing.FromAPI(client), ns, bp); err == nil {
			o.trust(snap, source)
			s := why.ExplainAll(snap, ns)
			result = &s
		}
	case o.kind != "":
		var w *why.Workload
		if snap, w, err = why.ReadWorkload(ctx, client, listing.FromAPI(client), o.kind, o.namespace, o.name, bp); err == nil {
			o.trust(snap, source)
			v := why.ExplainWorkload(snap, w)
			result = &v
		}
	default:
		var pod *corev1.Pod
		if snap, pod, err = why.ReadPod(ctx, client, listing.FromAPI(client), o.namespace, o.name, bp); err == nil {
			o.trust(snap, source)
			v := why.Explain(snap, pod)
			result = &v
		}
	}
	if err != nil {
		return o.readError(t, err)
	}
	if o.output == "json" {
		return why.RenderJSON(o.Out, result)
	}
	switch r := result.(type) {
	case *why.Summary:
		err = why.RenderSummary(o.Out, r)
	case *why.Verdict:
		err = why.Render(o.Out, r)
	}
	if err != nil {
		return err
	}
	if snap.Blueprint != nil {
		_, err = fmt.Fprintf(o.Out, "\n(blueprint %s from %s; context %s)\n", snap.Blueprint.Metadata.Name, source, t.context)
	} else if !o.all {
		_, err = fmt.Fprintf(o.Out, "\n(no blueprint describes this cluster's pools, so whether one could grow is not known: pass -f FILE; context %s)\n", t.context)
	}
	return err
}

// blueprint is -f FILE, which is trusted; or the one the cluster's other
// commands read (clusterBlueprint), trusted only if the cluster's nodes
// belong to it (trust).
func (o *whyOptions) blueprint(ctx context.Context, client kubernetes.Interface) (*v1alpha1.Blueprint, string, error) {
	if o.file != "" {
		bp, err := loadBlueprint(o.file, func(p problem.Problem) { fmt.Fprintln(o.ErrOut, p) })
		if err != nil {
			return nil, "", err
		}
		return bp.Blueprint, bp.source, nil
	}
	bp, err := clusterBlueprint(ctx, client, "", func(problem.Problem) {})
	if err != nil {
		if errors.Is(err, errUnreachable) {
			return nil, "", err
		}
		fmt.Fprintf(o.ErrOut, "warning: ignoring the default blueprint: %v\n", err)
		return nil, "", nil
	}
	if bp == nil {
		return nil, "", nil
	}
	return bp.Blueprint, bp.source, nil
}

// trust drops a blueprint found by default that the cluster's nodes do
// not belong to: its pools would describe another cluster.
func (o *whyOptions) trust(s *why.Snapshot, source string) {
	if o.file == "" && s.Blueprint != nil && !why.BlueprintOwnsNodes(s, s.Blueprint.Metadata.Name) {
		s.Blueprint = nil
	}
}

func (o *whyOptions) readError(t *target, err error) error {
	if apierrors.IsNotFound(err) {
		what := "pod"
		if o.kind != "" {
			what = strings.ToLower(o.kind)
		}
		return problem.Errorf("check the name and -n NAMESPACE; for a workload whose pods were never created, `berth why deployment/NAME` (or statefulset/, job/, replicaset/); `berth why --all` lists every Pending pod", "%s %q not found in namespace %s on %s", what, o.name, o.namespace, t)
	}
	if apierrors.IsForbidden(err) {
		return problem.Errorf("berth why lists nodes, pods, quotas, LimitRanges, PriorityClasses, PodDisruptionBudgets and events: use a context allowed to", "reading the cluster: %w", err)
	}
	return problem.Errorf("check the cluster is running and reachable, or pass --kubeconfig/--context", "reading the cluster %s: %w", t, err)
}
