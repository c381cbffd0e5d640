package autoscaler

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/internal/simtime"
)

// rehearsal is what the autoscaler keeps when it runs on a rehearsal's
// virtual clock (internal/simtime), where a scan that would find what the
// last one found is skipped: the clock stops at the next scan only when
// something the autoscaler watches changed since the last one, or a
// deadline it keeps (a node unneeded long enough, a cooldown's end, a
// node late to register, a pod to tell again) falls before it. Scans stay
// on the scanInterval grid of cluster-autoscaler's loop, and a skipped one
// would have decided nothing: its only loss is the status ConfigMap's
// probe time, which shows the last scan that ran.
type rehearsal struct {
	// changes counts the watched informers' events; changed is
	// signalled with each.
	changes atomic.Uint64
	changed chan struct{}
}

// rehearsing reports whether c runs on a rehearsal's virtual clock.
func (c *Controller) rehearsing() bool { return c.reh != nil }

// newRehearsal sets up what the autoscaler keeps on a virtual clock
// clk: handlers on the informers a scan reads, registered before the
// factory starts. Nil on the wall clock.
func (c *Controller) newRehearsal() *rehearsal {
	if _, ok := c.clock.(simtime.Virtual); !ok {
		return nil
	}
	r := &rehearsal{changed: make(chan struct{}, 1)}
	touch := func(any) {
		r.changes.Add(1)
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    touch,
		UpdateFunc: func(_, obj any) { touch(obj) },
		DeleteFunc: touch,
	}
	// A node's heartbeat (the simulated kubelet's status report, every
	// 10 to 20 minutes at random) changes nothing a scan reads.
	nodeHandler := handler
	nodeHandler.UpdateFunc = func(old, obj any) {
		if o, ok := old.(*corev1.Node); ok {
			if n, ok := obj.(*corev1.Node); ok && heartbeatOnly(o, n) {
				return
			}
		}
		touch(obj)
	}
	for _, w := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{{c.nodes, nodeHandler}, {c.pods, handler}, {c.budgets, handler}, {c.daemonSets, handler}, {c.claims, handler}, {c.namespaces, handler}, {c.volumes, handler}, {c.classes, handler}, {c.csiNodes, handler}, {c.drivers, handler}, {c.store.Informer(), handler}} {
		// An informer that cannot take a handler (stopped) makes every
		// scan run: nothing is skipped that should not be.
		if _, err := w.inf.AddEventHandler(w.h); err != nil {
			return nil
		}
	}
	return r
}

// heartbeatOnly reports whether a node's update changed nothing but its
// conditions' heartbeat times.
func heartbeatOnly(old, cur *corev1.Node) bool {
	if !equality.Semantic.DeepEqual(old.ObjectMeta.Labels, cur.ObjectMeta.Labels) || !equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		!equality.Semantic.DeepEqual(old.Spec, cur.Spec) || !equality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) || !equality.Semantic.DeepEqual(old.Status.Capacity, cur.Status.Capacity) ||
		len(old.Status.Conditions) != len(cur.Status.Conditions) {
		return false
	}
	for i := range old.Status.Conditions {
		a, b := old.Status.Conditions[i], cur.Status.Conditions[i]
		if a.Type != b.Type || a.Status != b.Status || a.Reason != b.Reason {
			return false
		}
	}
	return true
}

// deadline is the soonest moment after v.now at which a scan could
// decide something the last one did not, with nothing changed in
// between: zero when there is none, v.now when the next scan could (the
// last one grew a pool). Called with c.mu held, after a scan of v.
func (c *Controller) deadline(v *view) time.Time {
	var soonest time.Time
	at := func(t time.Time) {
		if t.After(v.now) && (soonest.IsZero() || t.Before(soonest)) {
			soonest = t
		}
	}
	if c.last.scaledUp {
		// A scan grows one pool; pods the upcoming nodes do not take
		// may grow another at the next.
		return v.now
	}
	p := v.profile
	for _, g := range v.groups {
		at(g.backoffUntil)
		for _, u := range g.upcoming {
			at(u.requested.Add(p.MaxNodeProvisionTime.Duration))
			if !u.created {
				at(u.due)
			}
		}
		for _, n := range g.nodes {
			at(n.CreationTimestamp.Add(p.MaxNodeProvisionTime.Duration))
		}
	}
	for _, since := range c.unneeded {
		at(since.Add(p.ScaleDownUnneededTime.Duration))
	}
	if !c.lastScaleUp.IsZero() {
		at(c.lastScaleUp.Add(p.ScaleDownDelayAfterAdd.Duration))
	}
	if !c.lastScaleDown.IsZero() {
		at(c.lastScaleDown.Add(p.ScaleDownDelayAfterDelete.Duration))
	}
	if !c.lastFailure.IsZero() {
		at(c.lastFailure.Add(p.ScaleDownDelayAfterFailure.Duration))
	}
	for _, n := range c.notified {
		at(n.at.Add(notifyAgain))
	}
	if d := p.NewPodScaleUpDelay; d != nil && d.Duration > 0 {
		for _, pod := range v.pods {
			if pod.Spec.NodeName == "" {
				at(pod.CreationTimestamp.Add(d.Duration))
			}
		}
	}
	return soonest
}

// waitForScan waits, on a virtual clock, for the next scan that could
// decide anything: the grid's next point (last, the last scan's time,
// plus whole intervals) at or after a change to what the autoscaler
// watches since seen (the change count the last scan's view was taken
// at), or at or after deadline. Scans come last in their moment
// (simtime.PhaseAutoscaler), so a scan at the moment of a change sees it,
// as a cluster-autoscaler scanning every interval would. It reports false
// when ctx ends first.
func (c *Controller) waitForScan(ctx context.Context, last time.Time, interval time.Duration, seen uint64, deadline time.Time) bool {
	r := c.reh
	for {
		var due time.Time
		switch {
		case r.changes.Load() != seen:
			// The scan at this moment, if it is a point of the grid:
			// scans come last in their moment, after the change.
			due = gridAfter(last, interval, c.clock.Now().Add(-1))
		case !deadline.IsZero():
			due = gridAfter(last, interval, deadline.Add(-1))
		}
		if due.IsZero() {
			select {
			case <-ctx.Done():
				return false
			case <-r.changed:
				continue
			}
		}
		t := c.clock.NewTimer(due.Sub(c.clock.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
			return true
		case <-r.changed:
			// Look again: a change moves a later scan to the next point.
			t.Stop()
		}
	}
}

// gridAfter is the first point of the grid last + k*interval (k >= 1)
// after t (t minus a nanosecond: at or after t).
func gridAfter(last time.Time, interval time.Duration, t time.Time) time.Time {
	if interval <= 0 {
		return t
	}
	k := t.Sub(last)/interval + 1
	return last.Add(max(k, 1) * interval)
}
