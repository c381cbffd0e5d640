package pools

import (
	"context"
	"fmt"
	"io"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Options say how Execute works.
type Options struct {
	// Progress receives a line per step. Nil discards them.
	Progress io.Writer
	// DrainTimeout bounds how long a PodDisruptionBudget may hold back a
	// drain, and how long new nodes and moved pods may take. Zero means
	// 5 minutes.
	DrainTimeout time.Duration
	// DryRun sends every write with server-side dry run and drains
	// nothing.
	DryRun bool
}

// Execute makes one planned change. Every step can be repeated, so a run
// that is interrupted is finished by planning and executing again.
func Execute(ctx context.Context, c kubernetes.Interface, ch *Change, o Options) error {
	out := o.Progress
	if out == nil {
		out = io.Discard
	}
	if len(ch.Blockers) > 0 {
		p := ch.Blockers[0]
		p.Object = ch.Object()
		return &p
	}
	d := &Drainer{Client: c, Progress: out, Timeout: o.DrainTimeout}
	var dryRun []string
	if o.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	start := time.Now()
	if err := createNodes(ctx, c, ch.add, dryRun); err != nil {
		return err
	}
	if len(ch.add) > 0 && !o.DryRun {
		if err := waitReady(ctx, c, nodeNames(ch.add), d.timeout()); err != nil {
			return fmt.Errorf("pool %s: %w", ch.Pool, err)
		}
		fmt.Fprintf(out, "    %d new node(s) Ready: %v (%.1fs)\n", len(ch.add), nodeNames(ch.add), time.Since(start).Seconds())
		if ch.ToVersion != "" {
			if err := verifyVersion(ctx, c, nodeNames(ch.add), ch.ToVersion); err != nil {
				return fmt.Errorf("pool %s: %w", ch.Pool, err)
			}
			fmt.Fprintf(out, "    verified: the new node(s) report kubelet %s\n", ch.ToVersion)
		}
	}
	for _, u := range ch.update {
		if _, err := c.CoreV1().Nodes().Patch(ctx, u.name, types.MergePatchType, u.patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManager, DryRun: dryRun}); err != nil {
			return fmt.Errorf("updating node %s: %w", u.name, err)
		}
		fmt.Fprintf(out, "    updated %s\n", u.name)
	}
	if len(ch.remove) == 0 {
		return nil
	}
	if o.DryRun {
		fmt.Fprintf(out, "    would cordon, drain and delete %v (not done in a dry run)\n", ch.remove)
		return nil
	}
	// Cordon every old node first, so that pods evicted from one do not
	// land on another that is about to go.
	for _, n := range ch.remove {
		if err := d.Cordon(ctx, n); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "    cordoned %v\n", ch.remove)
	for _, n := range ch.remove {
		t := time.Now()
		moved, err := d.Drain(ctx, n)
		if err != nil {
			return drainStopped(ch, err)
		}
		if err := d.WaitMoved(ctx, moved); err != nil {
			return fmt.Errorf("pool %s: %w", ch.Pool, err)
		}
		fmt.Fprintf(out, "    drained %s: %d pod(s) moved and running again (%.1fs)\n", n, len(moved), time.Since(t).Seconds())
	}
	for _, n := range ch.remove {
		if err := c.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", n, err)
		}
	}
	fmt.Fprintf(out, "    deleted %v\n", ch.remove)
	return nil
}

// drainStopped explains a drain that could not finish, and what state it
// left the pool in.
func drainStopped(ch *Change, err error) error {
	state := "the nodes being removed are cordoned and keep the pods they still have"
	if len(ch.add) > 0 {
		state = "the new nodes are Ready; the old ones are cordoned and keep the pods they still have"
	}
	return problem.Errorf("let the budget allow an eviction (add replicas, or relax the budget), then run `berth apply` again: it picks up where it stopped", "pool %s: %w\nThe cluster is still serving: %s.", ch.Pool, err, state)
}

func createNodes(ctx context.Context, c kubernetes.Interface, nodes []*corev1.Node, dryRun []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, n := range nodes {
		g.Go(func() error {
			_, err := c.CoreV1().Nodes().Create(gctx, StripGPUs(n), metav1.CreateOptions{FieldManager: v1alpha1.FieldManager, DryRun: dryRun})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating node %s: %w", n.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func waitReady(ctx context.Context, c kubernetes.Interface, names []string, timeout time.Duration) error {
	var notReady []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		notReady = notReady[:0]
		for _, name := range names {
			n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !isReady(n) {
				notReady = append(notReady, name)
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		return problem.Errorf("check that the berth local cluster is running (`berth status`); its log is in its state directory", "new nodes %v not Ready after %s: %w", notReady, timeout, err)
	}
	return nil
}

// verifyVersion checks that every named node reports kubelet version v,
// before any workload moves to them.
func verifyVersion(ctx context.Context, c kubernetes.Interface, names []string, v string) error {
	for _, name := range names {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("verifying node %s: %w", name, err)
		}
		if got := n.Status.NodeInfo.KubeletVersion; got != v {
			return problem.Errorf(fmt.Sprintf("delete the new nodes (`kubectl delete node %s`) and run `berth apply` again", name), "new node %s reports kubelet %s, not %s; nothing was moved to it", name, got, v)
		}
	}
	return nil
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
