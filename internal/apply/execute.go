package apply

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"berth.io/berth/internal/pools"
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
		return fmt.Errorf("apply stopped before changing anything:\n  %s", strings.Join(problems, "\n  "))
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: o.ForceConflicts}
	var dryRun []string
	if o.DryRun {
		dryRun = []string{metav1.DryRunAll}
		opts.DryRun = dryRun
	}
	verb := map[Action]string{Create: "created", Update: "updated", Replace: "replaced", Conflict: "took over", Delete: "deleted"}
	if o.DryRun {
		verb = map[Action]string{Create: "would create", Update: "would update", Replace: "would replace", Conflict: "would take over", Delete: "would delete"}
	}
	creating := map[string]bool{}
	for i := range plan.Objects {
		ch := &plan.Objects[i]
		if ch.Action == Delete {
			continue
		}
		if o.DryRun && creating[ch.Namespace] {
			fmt.Fprintf(out, "  %s %s (not sent: its namespace is not created in a dry run)\n", verb[ch.Action], ch.Ref())
			continue
		}
		res := resource(cl.Dynamic, ch.Kind, ch.Namespace)
		if ch.Action == Replace && !o.DryRun {
			if err := deleteAndWait(ctx, cl, ch); err != nil {
				return err
			}
		}
		if _, err := res.Apply(ctx, ch.Name, ch.desired, opts); err != nil {
			if isConflict(err) {
				return fmt.Errorf("%s: %s", ch.Ref(), conflictNote(err))
			}
			return fmt.Errorf("applying %s: %w", ch.Ref(), err)
		}
		if ch.Kind.Kind == "Namespace" && ch.Action == Create {
			creating[ch.Name] = true
		}
		fmt.Fprintf(out, "  %s %s\n", verb[ch.Action], ch.Ref())
	}
	for i := range plan.Pools {
		ch := &plan.Pools[i]
		fmt.Fprintf(out, "  pool %s: %s\n", ch.Pool, describePool(ch))
		if err := pools.Execute(ctx, cl.Kube, ch, pools.Options{Progress: out, DrainTimeout: o.DrainTimeout, DryRun: o.DryRun}); err != nil {
			return err
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
