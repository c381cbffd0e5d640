package cluster

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
)

// EnsurePoolNodes gives every pool of the blueprint its nodes, registered
// without GPUs (pools.StripGPUs: the device plugin advertises them). A pool that
// already has nodes (a resumed cluster) keeps them unless sizes names it;
// a pool with none gets sizes[pool], else its initial size. It returns the
// names of all the blueprint's pool nodes. Where Karpenter provisions,
// only System pools have nodes of their own: Karpenter starts the User
// pools' nodes for pods that need them, and they are its to keep.
//
// parallel is how many creates are in flight at once. The scheduler adds
// nodes to its tree in the order they arrive, and breaks a tie between
// equal nodes by that order: a rehearsal, which must place the same pods
// on the same nodes every run, creates them one at a time, in the
// blueprint's order.
func EnsurePoolNodes(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint, sizes map[string]int32, parallel int) ([]string, error) {
	var names []string
	var create []*corev1.Node
	var remove []string
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if bp.Spec.UsesKarpenter() && p.Mode != v1alpha1.ModeSystem {
			continue
		}
		existing, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPool + "=" + p.Name})
		if err != nil {
			return nil, fmt.Errorf("listing nodes of pool %s: %w", p.Name, err)
		}
		want, sized := sizes[p.Name]
		if !sized {
			want = p.InitialSize()
			if len(existing.Items) > 0 {
				want = int32(len(existing.Items))
			}
		}
		have := map[string]bool{}
		for _, n := range existing.Items {
			have[n.Name] = true
		}
		for j := 0; j < int(want); j++ {
			n := pools.NewNode(bp, p, j)
			names = append(names, n.Name)
			if have[n.Name] {
				delete(have, n.Name)
				continue
			}
			create = append(create, pools.StripGPUs(n))
		}
		for extra := range have { // shrunk with --nodes
			remove = append(remove, extra)
		}
	}
	// Thousands of nodes are created in parallel: one at a time, the
	// round trips alone would dominate start-up.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	for _, n := range create {
		g.Go(func() error {
			if _, err := c.CoreV1().Nodes().Create(gctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating node %s of pool %s: %w", n.Name, n.Labels[v1alpha1.LabelPool], err)
			}
			return nil
		})
	}
	for _, name := range remove {
		g.Go(func() error {
			if err := c.CoreV1().Nodes().Delete(gctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing node %s: %w", name, err)
			}
			return nil
		})
	}
	return names, g.Wait()
}
