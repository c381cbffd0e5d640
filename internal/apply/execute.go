package apply

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/budgets"
	"berth.io/berth/internal/compile"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/recorded"
)

// ExecOptions say how a plan is executed.
type ExecOptions struct {
	// DryRun sends every write with server-side dry run: the API server
	// validates and admits it, and stores nothing.
	DryRun bool
	// ForceConflicts takes fields another manager owns.
	ForceConflicts bool
	// Progress receives a line per step. Nil discards them.
	Progress io.Writer
	// DrainTimeout bounds how long a PodDisruptionBudget may hold back a
	// pool's drain. Zero means 5 minutes.
	DrainTimeout time.Duration
}

// Execute carries out a plan: objects are created, updated and replaced
// in dependency order, then pools change, then objects that left the
// blueprint are deleted. It refuses to start when the plan has problems
// (conflicts, blocked pools) unless ForceConflicts covers them all.
func Execute(ctx context.Context, cl Client, plan *Plan, o ExecOptions) error {
	out := o.Progress
	if out == nil {
		out = io.Discard
	}
	if problems := plan.Problems(); len(problems) > 0 && !(o.ForceConflicts && onlyConflicts(plan)) {
		return fmt.Errorf("apply stopped before changing anything:\n  %s", indent(problems.Error(), "  "))
	}
	opts := metav1.ApplyOptions{FieldManager: v1alpha1.FieldManager, Force: o.ForceConflicts}
	var dryRun []string
	if o.DryRun {
		dryRun = []string{metav1.DryRunAll}
		opts.DryRun = dryRun
	}
	verb := map[Action]string{Create: "created", Update: "updated", Replace: "replaced", Conflict: "took over", Delete: "deleted"}
	if o.DryRun {
		verb = map[Action]string{Create: "would create", Update: "would update", Replace: "would replace", Conflict: "would take over", Delete: "would delete"}
	}
	// Objects go in stages (cluster-wide and namespaces, then what lives
	// in namespaces, then admission policies); within a stage they do
	// not depend on each other and are applied concurrently. Progress is
	// printed in plan order once a stage is done.
	creating := map[string]bool{}
	for _, stage := range stages(plan.Objects) {
		lines := make([]string, len(stage))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(4)
		for j, ch := range stage {
			if o.DryRun && creating[ch.Namespace] {
				lines[j] = fmt.Sprintf("  %s %s (not sent: its namespace is not created in a dry run)", verb[ch.Action], ch.Ref())
				continue
			}
			g.Go(func() error {
				res := resource(cl.Dynamic, ch.Kind, ch.Namespace)
				if ch.Action == Replace && !o.DryRun {
					if err := deleteAndWait(gctx, cl, ch); err != nil {
						return err
					}
				}
				if _, err := res.Apply(gctx, ch.Name, ch.desired, opts); err != nil {
					if isConflict(err) {
						return &problem.Problem{Object: ch.object(), Message: conflictNote(err), Fix: conflictFix, Err: err}
					}
					return fmt.Errorf("applying %s: %w", ch.Ref(), err)
				}
				lines[j] = fmt.Sprintf("  %s %s", verb[ch.Action], ch.Ref())
				return nil
			})
		}
		err := g.Wait()
		for _, l := range lines {
			if l != "" {
				fmt.Fprintln(out, l)
			}
		}
		if err != nil {
			return err
		}
		for _, ch := range stage {
			if ch.Kind.Kind == "Namespace" && ch.Action == Create {
				creating[ch.Name] = true
			}
		}
	}
	// The local cluster's autoscaler takes pools' bounds and its profile
	// from the recorded blueprint: record it before the pools change.
	if plan.blueprint != nil && !o.DryRun {
		if err := recorded.Write(ctx, cl.Kube, plan.blueprint); err != nil {
			return err
		}
	}
	for i := range plan.Pools {
		ch := &plan.Pools[i]
		fmt.Fprintf(out, "  pool %s: %s\n", ch.Pool, describePool(ch))
		if err := pools.Execute(ctx, cl.Kube, ch, pools.Options{Progress: out, DrainTimeout: o.DrainTimeout, DryRun: o.DryRun}); err != nil {
			return err
		}
	}
	// Budgets once the namespaces carry their classes' budgets, before
	// anything is deleted.
	if len(plan.Budgets) > 0 {
		if err := budgets.Execute(ctx, cl.Kube, plan.Budgets, o.DryRun); err != nil {
			return err
		}
		for _, ch := range plan.Budgets {
			fmt.Fprintf(out, "  %s %s\n", verb[Action(ch.Action)], ch.Ref())
		}
	}
	for i := range plan.Objects {
		ch := &plan.Objects[i]
		if ch.Action != Delete {
			continue
		}
		err := resource(cl.Dynamic, ch.Kind, ch.Namespace).Delete(ctx, ch.Name, metav1.DeleteOptions{
			DryRun:        dryRun,
			Preconditions: &metav1.Preconditions{UID: uidPtr(ch.uid)},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", ch.Ref(), err)
		}
		fmt.Fprintf(out, "  %s %s\n", verb[ch.Action], ch.Ref())
	}
	return nil
}

// stages splits the objects to create, update and replace into groups
// that can each be applied at once, in dependency order.
func stages(objects []ObjectChange) [][]*ObjectChange {
	out := make([][]*ObjectChange, 3)
	for i := range objects {
		if ch := &objects[i]; ch.Action != Delete {
			out[stageOf(ch.Kind)] = append(out[stageOf(ch.Kind)], ch)
		}
	}
	return out
}

// stageOf is when an object of kind is applied: cluster-wide objects and
// namespaces, then what lives in namespaces, then admission policies.
func stageOf(k compile.Kind) int {
	switch {
	case strings.Contains(k.Kind, "AdmissionPolicy"):
		return 2
	case k.Namespaced:
		return 1
	default:
		return 0
	}
}

func onlyConflicts(plan *Plan) bool {
	for _, c := range plan.Pools {
		if len(c.Blockers) > 0 {
			return false
		}
	}
	return true
}

// deleteAndWait deletes the live object a replace supersedes and waits
// until it is gone, so that the new one can take its name.
func deleteAndWait(ctx context.Context, cl Client, ch *ObjectChange) error {
	res := resource(cl.Dynamic, ch.Kind, ch.Namespace)
	err := res.Delete(ctx, ch.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: uidPtr(ch.uid)}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s to replace it: %w", ch.Ref(), err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		live, err := res.Get(ctx, ch.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && string(live.GetUID()) != ch.uid, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be deleted before creating it again: %w", ch.Ref(), err)
	}
	return nil
}

func uidPtr(uid string) *types.UID {
	u := types.UID(uid)
	return &u
}
