package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/model"
	"berth.io/berth/internal/problem"
)

// newModelPromoteCommand is promote, or with rollback set, rollback.
func newModelPromoteCommand(o *modelOptions, rollback bool) *cobra.Command {
	var alias, reason string
	repin := true
	cmd := &cobra.Command{
		Use:   "promote NAME VERSION --alias ALIAS [--reason TEXT]",
		Short: "Point an alias at a version (a compare-and-swap, kept in the history)",
		Long: `Point an alias at a version. The move is a compare-and-swap: if someone
else moves the alias at the same moment, one of you wins and the other is
told who. Then the Deployments and StatefulSets of the current cluster
that follow the alias (annotated ` + v1alpha1.AnnotationModel + `: NAME@ALIAS) are
re-pinned to the version, which rolls them as any template change does,
under their maxUnavailable and disruption budgets.`,
		Args: cobra.ExactArgs(2),
	}
	if rollback {
		cmd.Use = "rollback NAME --alias ALIAS [--reason TEXT]"
		cmd.Short = "Move an alias back to where it pointed before its last move"
		cmd.Long = `Move an alias back to where it pointed before its last move that has not
been rolled back: a second rollback goes one move further back. It is a
pointer move like promote, kept in the history, and re-pins the workloads
that follow the alias. Nothing is rebuilt or uploaded.`
		cmd.Args = cobra.ExactArgs(1)
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		r, err := o.registry()
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		var m *model.Move
		if rollback {
			m, err = r.Rollback(ctx, args[0], alias, reason)
		} else {
			n, perr := strconv.Atoi(args[1])
			if perr != nil || n < 1 {
				return problem.Errorf(fmt.Sprintf("give the version `berth model list %s` shows", args[0]), "version %q is not a positive number", args[1])
			}
			m, err = r.Promote(ctx, args[0], n, alias, reason)
		}
		var conflict *model.ConflictError
		if errors.As(err, &conflict) {
			return &ExitError{Code: 3, Err: err}
		}
		if err != nil {
			return err
		}
		var pinned []string
		if repin {
			v, err := r.Version(ctx, m.Model, m.To)
			if err != nil {
				return err
			}
			if pinned, err = o.repin(ctx, m, v); err != nil {
				fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
			}
		}
		if o.output == "json" {
			return o.json(map[string]any{"move": m, "repinned": pinned})
		}
		from := "nothing"
		if m.From > 0 {
			from = strconv.Itoa(m.From)
		}
		fmt.Fprintf(o.Out, "%s@%s: %s → %d (move %d)\n", m.Model, m.Alias, from, m.To, m.Seq)
		for _, p := range pinned {
			fmt.Fprintf(o.Out, "re-pinned %s to %s:%d\n", p, m.Model, m.To)
		}
		return nil
	}
	cmd.Flags().StringVar(&alias, "alias", "", "the alias to move (production, staging, ...)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the history")
	cmd.Flags().BoolVar(&repin, "repin", true, "re-pin the current cluster's workloads that follow the alias")
	cmd.MarkFlagRequired("alias")
	return cmd
}

// repin sets the pinned version on every Deployment and StatefulSet that
// follows the moved alias, and returns them as KIND/NAMESPACE/NAME.
func (o *modelOptions) repin(ctx context.Context, m *model.Move, v *model.Version) ([]string, error) {
	if _, err := o.kube.loader().ClientConfig(); err != nil {
		return nil, nil // no cluster configured: the registry is all there is
	}
	t, err := o.kube.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("the alias moved, but no workload was re-pinned: %w", err)
	}
	follow := m.Model + "@" + m.Alias
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.AnnotationModelRef:  v.Ref(),
		v1alpha1.AnnotationModelSize: ModelVolumeSize(v.Size),
	}}}}})
	var pinned []string
	apps := t.client.Kube.AppsV1()
	deps, err := apps.Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("the alias moved, but listing Deployments to re-pin failed: %w", err)
	}
	for _, d := range deps.Items {
		if d.Annotations[v1alpha1.AnnotationModel] != follow {
			continue
		}
		if _, err := apps.Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager}); err != nil {
			return pinned, fmt.Errorf("re-pinning deployment %s/%s to %s: %w", d.Namespace, d.Name, v.Ref(), err)
		}
		pinned = append(pinned, "deployment/"+d.Namespace+"/"+d.Name)
	}
	sets, err := apps.StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return pinned, fmt.Errorf("listing StatefulSets to re-pin: %w", err)
	}
	for _, s := range sets.Items {
		if s.Annotations[v1alpha1.AnnotationModel] != follow {
			continue
		}
		if _, err := apps.StatefulSets(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager}); err != nil {
			return pinned, fmt.Errorf("re-pinning statefulset %s/%s to %s: %w", s.Namespace, s.Name, v.Ref(), err)
		}
		pinned = append(pinned, "statefulset/"+s.Namespace+"/"+s.Name)
	}
	return pinned, nil
}

// ModelVolumeSize is the emptyDir limit for a model of size bytes: the
// model plus a tenth and 64Mi for the puller's bookkeeping, in Mi.
func ModelVolumeSize(size int64) string {
	mi := (size+size/10)>>20 + 64 + 1
	return resource.NewQuantity(mi<<20, resource.BinarySI).String()
}
