package autoscaler

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/words"
)

// provision asks for a node: it registers at u.due, as a cloud's VM
// joins the cluster once booted. Called with c.mu held.
func (c *Controller) provision(ctx context.Context, g *group, u *upcoming) {
	g.upcoming = append(g.upcoming, u)
	wait := u.due.Sub(c.clock.Now())
	if wait <= 0 {
		c.register(ctx, u)
		return
	}
	u.timer = c.clock.AfterFunc(wait, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.registerDueWith(ctx, u)
	})
}

// registerDueWith registers u, due now, and every other upcoming node
// due by then, in the order of their names: nodes due at one moment have
// a timer each, whose callbacks take c.mu in the order the machine ran
// them, and the order nodes join decides the scheduler's order of them
// (so which of equal nodes a pod takes). Called with c.mu held, from u's
// timer (a fake clock holds its lock while it runs the callback, so the
// callback goes by u's deadline, not by asking the clock).
func (c *Controller) registerDueWith(ctx context.Context, u *upcoming) {
	due := []*upcoming{u}
	for _, g := range c.groups {
		for _, o := range g.upcoming {
			if o != u && !o.created && !u.due.Before(o.due) {
				due = append(due, o)
			}
		}
	}
	slices.SortFunc(due, func(a, b *upcoming) int { return cmp.Compare(a.node.Name, b.node.Name) })
	for _, u := range due {
		c.register(ctx, u)
	}
}

// register creates the node in the API, as its kubelet would register
// it: without GPUs until the device plugin advertises them. A failure
// is retried by the next scan. Called with c.mu held.
func (c *Controller) register(ctx context.Context, u *upcoming) {
	if u.created {
		return
	}
	n := pools.StripGPUs(u.node)
	_, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: v1alpha1.FieldManagerAutoscaler})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		klog.FromContext(ctx).Error(err, "registering a node the autoscaler added", "node", n.Name)
		return
	}
	u.created = true
}

// registerDue registers the upcoming nodes whose time has come but
// whose registration failed. Called with c.mu held.
func (c *Controller) registerDue(ctx context.Context, v *view) {
	for _, g := range v.groups {
		for _, u := range g.upcoming {
			if !u.created && !v.now.Before(u.due) {
				c.register(ctx, u)
			}
		}
	}
}

// removeEmpty deletes empty unneeded nodes at once, never taking a pool
// below its minimum.
func (c *Controller) removeEmpty(ctx context.Context, v *view, cands []*candidate) {
	for _, cd := range cands {
		g, n := cd.g, cd.node
		if g.target() <= g.min() {
			continue
		}
		if err := c.taint(ctx, n.Name, true); err != nil {
			c.failed(ctx, v.now, n, err)
			continue
		}
		c.recorder.Event(n, corev1.EventTypeNormal, castatus.ReasonScaleDownNode, "marked the node as toBeDeleted/unschedulable")
		c.event(ctx, corev1.EventTypeNormal, castatus.ReasonScaleDownEmpty, "Scale-down: removing empty node %q", n.Name)
		from := g.target()
		if err := c.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			c.failed(ctx, v.now, n, err)
			continue
		}
		g.markRemoving(n.Name)
		delete(c.unneeded, n.Name)
		c.lastScaleDown = v.now
		g.lastDown = &castatus.Event{Time: metaTime(v.now), From: from, To: g.target(),
			Reason: fmt.Sprintf("node %s was empty and unneeded for %s (%s)", n.Name, since(v.now, cd.since), cd.util)}
	}
}

// removeDrained drains one node through the Eviction API in the
// background and deletes it when its pods are gone. Called with c.mu
// held.
func (c *Controller) removeDrained(ctx context.Context, v *view, cd *candidate) {
	g, n := cd.g, cd.node
	if err := c.taint(ctx, n.Name, true); err != nil {
		c.failed(ctx, v.now, n, err)
		return
	}
	c.draining = n.Name
	c.recorder.Event(n, corev1.EventTypeNormal, castatus.ReasonScaleDownNode, "marked the node as toBeDeleted/unschedulable")
	c.event(ctx, corev1.EventTypeNormal, castatus.ReasonScaleDownNode, "Scale-down: removing node %s, utilization: %s, pods to reschedule: %s", n.Name, cd.util, words.List(podNames(cd.pods), 5))
	grace := int64(*v.profile.MaxGracefulTerminationSec)
	unneededFor := since(v.now, cd.since)
	go func() {
		err := c.drain(ctx, n.Name, cd.pods, grace)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.draining = ""
		now := c.clock.Now()
		if err == nil {
			err = c.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		}
		if err != nil {
			c.failed(ctx, now, n, err)
			return
		}
		from := g.target()
		g.markRemoving(n.Name)
		delete(c.unneeded, n.Name)
		c.lastScaleDown = now
		g.lastDown = &castatus.Event{Time: metaTime(now), From: from, To: g.target(),
			Reason: fmt.Sprintf("node %s was unneeded for %s (%s); %s moved", n.Name, unneededFor, cd.util, words.Count(len(cd.pods), "pod"))}
	}()
}

// drain evicts the node's pods through the pools' Drainer, as
// cluster-autoscaler drains: every pod at once, each with its grace
// period capped at grace, a refused eviction retried for up to
// maxPodEvictionTime, the pods waited for grace plus
// podEvictionHeadroom, and an event on each pod evicted. The node is
// tainted already, not cordoned.
func (c *Controller) drain(ctx context.Context, node string, pods []*corev1.Pod, grace int64) error {
	d := &pools.Drainer{
		Client:      c.client,
		Timeout:     maxPodEvictionTime,
		GoneTimeout: time.Duration(grace)*time.Second + podEvictionHeadroom,
		MaxGrace:    &grace,
		Clock:       c.clock,
		Evicted: func(p *corev1.Pod) {
			c.recorder.Event(p, corev1.EventTypeNormal, castatus.ReasonScaleDown, "deleting pod for node scale down")
		},
	}
	return d.Evict(ctx, node, pods)
}

// maxPodEvictionTime is how long cluster-autoscaler retries an eviction
// a PodDisruptionBudget refuses before it gives the node up.
const maxPodEvictionTime = 2 * time.Minute

// podEvictionHeadroom is how long past their grace period
// cluster-autoscaler waits for evicted pods to be gone.
const podEvictionHeadroom = 30 * time.Second

// failed records a failed removal: the node is untainted and scale-down
// waits scaleDownDelayAfterFailure.
func (c *Controller) failed(ctx context.Context, now time.Time, n *corev1.Node, err error) {
	c.lastFailure = now
	if terr := c.taint(ctx, n.Name, false); terr != nil {
		klog.FromContext(ctx).Error(terr, "untainting a node scale-down gave up", "node", n.Name)
	}
	c.recorder.Event(n, corev1.EventTypeWarning, castatus.ReasonScaleDownFailed, "failed to drain the node, aborting ScaleDown: "+err.Error())
}

// taint adds (or removes) cluster-autoscaler's ToBeDeleted taint, so the
// scheduler places nothing new on a node being removed.
func (c *Controller) taint(ctx context.Context, node string, on bool) error {
	n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != v1alpha1.TaintToBeDeleted {
			taints = append(taints, t)
		}
	}
	if on {
		taints = append(taints, corev1.Taint{Key: v1alpha1.TaintToBeDeleted, Value: fmt.Sprint(c.clock.Now().Unix()), Effect: corev1.TaintEffectNoSchedule})
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
		"spec":     map[string]any{"taints": taints},
	})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerAutoscaler})
	return err
}

func (g *group) markRemoving(name string) {
	if g.removing == nil {
		g.removing = map[string]bool{}
	}
	g.removing[name] = true
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}
