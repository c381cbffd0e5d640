package rehearse

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/internal/rehearse/trace"
	"berth.io/berth/internal/simtime"
)

// poolNodes are the nodes of pool up now.
func poolNodes(ctx context.Context, o Options, pool string) ([]corev1.Node, error) {
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelPool: pool}).String()
	list, err := o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// interrupt gives every node of the interruption's pool that is up now
// the pool's spot notice, through o.Interrupt, and says what it did.
func interrupt(ctx context.Context, o Options, in trace.Interruption) (time.Time, report.DisruptionResult) {
	res := report.DisruptionResult{Kind: report.KindInterruption, Pool: in.Pool}
	var notice time.Duration
	for i := range o.Blueprint.Spec.Pools {
		if p := &o.Blueprint.Spec.Pools[i]; p.Name == in.Pool {
			notice = p.SpotNotice()
		}
	}
	res.Notice = report.Duration(notice)
	nodes, err := poolNodes(ctx, o, in.Pool)
	now := o.Clock.Now()
	if err == nil && len(nodes) > 0 {
		err = o.Interrupt(ctx, nodes, notice, now)
	}
	if err != nil {
		res.Error = err.Error()
		return now, res
	}
	for _, n := range nodes {
		res.Nodes = append(res.Nodes, n.Name)
	}
	return now, res
}

// drain replaces every node of the drain's pool that is up now, as
// pools.Execute replaces a pool's nodes: all cordoned first, so that
// evicted pods do not land on a node about to go; then each drained
// through the Eviction API (the budgets decide how many go at a time),
// its pods waited for until they run again elsewhere, and the node
// deleted. The autoscaler adds the nodes the evicted pods need. It
// notes the drain when it starts and again when it ends.
func (r *recorder) drain(ctx context.Context, o Options, d trace.Drain) {
	nodes, err := poolNodes(ctx, o, d.Pool)
	res := report.DisruptionResult{Kind: report.KindDrain, Pool: d.Pool}
	for _, n := range nodes {
		res.Nodes = append(res.Nodes, n.Name)
	}
	started := r.tl.now()
	at := r.disrupted(started, res)
	if err == nil {
		err = replace(ctx, o, nodes)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		r.disruptions[at].Error = err.Error()
		return
	}
	if err != nil {
		return // stopped with the rehearsal: still under way
	}
	r.disruptions[at].Took = report.Duration(r.tl.now().Sub(started))
}

// replace cordons nodes, then drains and deletes each in turn. Its
// retries and timeouts (a budget may hold an eviction back for five
// minutes) count the cluster's clock, and it looks at what it waits for
// once each moment's work has settled (simtime.PhaseDrain).
func replace(ctx context.Context, o Options, nodes []corev1.Node) error {
	d := &pools.Drainer{Client: o.Client, Clock: o.Clock.Phase(simtime.PhaseDrain)}
	for _, n := range nodes {
		if err := d.Cordon(ctx, n.Name); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		moved, err := d.Drain(ctx, n.Name)
		if err != nil {
			return err
		}
		if err := d.WaitMoved(ctx, moved); err != nil {
			return fmt.Errorf("draining %s: %w", n.Name, err)
		}
		if err := o.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", n.Name, err)
		}
	}
	return nil
}

// disrupted notes a disruption carried out (or begun) at now, and
// returns its index among the report's.
func (r *recorder) disrupted(now time.Time, d report.DisruptionResult) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	d.At = report.Duration(r.tl.trace(now))
	r.disruptions = append(r.disruptions, d)
	return len(r.disruptions) - 1
}
