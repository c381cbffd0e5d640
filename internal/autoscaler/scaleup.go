package autoscaler

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/simulate"
	"berth.io/berth/internal/words"
)

// option is one pool that could grow for some of the pending pods.
type option struct {
	g       *group
	packing *simulate.Packing
}

// scaleUp grows at most one pool for the pods the scheduler could not
// place, as one cluster-autoscaler loop does. It reports whether a pool
// grew.
func (c *Controller) scaleUp(ctx context.Context, v *view) (bool, error) {
	pending := unschedulable(v)
	if len(pending) == 0 {
		return false, nil
	}
	sim, err := v.simulation(ctx, true)
	if err != nil {
		return false, err
	}
	// Pods that fit where nodes exist or are coming need no new node:
	// freed capacity, or the nodes an earlier scan asked for.
	marked := len(pending)
	if _, pending, err = sim.Place(ctx, pending); err != nil || len(pending) == 0 {
		if err == nil {
			// The scheduler found no node and the simulation found one:
			// no scale-up, and nothing else says so.
			klog.FromContext(ctx).Info("autoscaler: unschedulable pods fit existing or upcoming nodes in simulation; no scale-up", "pods", marked)
		}
		return false, err
	}
	opts, why, err := c.options(ctx, v, sim, pending)
	if err != nil {
		return false, err
	}
	helped := map[types.UID]bool{}
	for _, o := range opts {
		for _, p := range o.packing.Placements {
			helped[p.Pod.UID] = true
		}
	}
	for _, p := range pending {
		if !helped[p.UID] {
			c.notTriggered(ctx, v, p, why[p.UID])
		}
	}
	if len(opts) == 0 {
		return false, nil
	}
	best, chose := c.expand(v, opts)
	c.grow(ctx, v, best, chose)
	return true, nil
}

// options packs the pending pods onto each pool that may grow, and
// records, per pod, why each pool would not take it. The pools'
// questions are independent, so each pool is packed on a clone of the
// simulation of its own, concurrently.
func (c *Controller) options(ctx context.Context, v *view, sim *simulate.Simulator, pending []*corev1.Pod) ([]*option, map[types.UID][]castatus.NotTriggered, error) {
	daemons := daemonPods(v)
	why := map[types.UID][]castatus.NotTriggered{}
	type job struct {
		g       *group
		room    int
		sim     *simulate.Simulator
		packing *simulate.Packing
		err     error
	}
	var jobs []*job
	for _, g := range v.groups {
		if g.autoscaled() && v.now.Before(g.backoffUntil) {
			for _, p := range pending {
				why[p.UID] = append(why[p.UID], castatus.NotTriggered{Pool: g.name(), Reason: castatus.InBackoff + " (" + g.backoffWhy + ")"})
			}
			continue
		}
		j := &job{g: g, sim: sim}
		if g.autoscaled() {
			j.room = max(g.max()-g.target(), 0)
		}
		if len(jobs) > 0 {
			var err error
			if j.sim, err = sim.Clone(ctx); err != nil {
				return nil, nil, err
			}
		}
		jobs = append(jobs, j)
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			j.packing, j.err = j.sim.Pack(ctx, pending, j.g.template(j.room, daemons), j.room)
		}()
	}
	wg.Wait()
	var opts []*option
	for _, j := range jobs {
		g, packing := j.g, j.packing
		if j.err != nil {
			return nil, nil, fmt.Errorf("pool %s: %w", g.name(), j.err)
		}
		for _, m := range packing.Misfits {
			switch {
			case m.Verdict.Fits() && g.autoscaled():
				why[m.Pod.UID] = append(why[m.Pod.UID], castatus.NotTriggered{Pool: g.name(), Reason: fmt.Sprintf("%s (%d)", castatus.MaxSizeReached, g.max())})
			case m.Verdict.Fits():
				why[m.Pod.UID] = append(why[m.Pod.UID], castatus.NotTriggered{Pool: g.name(), Reason: fmt.Sprintf("%s (a fixed pool of %d)", castatus.NotAutoscaled, g.max())})
			case g.autoscaled():
				why[m.Pod.UID] = append(why[m.Pod.UID], castatus.NotTriggered{Pool: g.name(), Reason: strings.Join(m.Verdict.Reasons, ", ")})
			}
		}
		if g.autoscaled() && len(packing.Placements) > 0 {
			opts = append(opts, &option{g: g, packing: packing})
		}
	}
	return opts, why, nil
}

// grow adds the nodes the chosen packing needs to its pool.
func (c *Controller) grow(ctx context.Context, v *view, o *option, chose string) {
	g := o.g
	from := g.target()
	n := min(o.packing.Nodes, g.max()-from)
	to := from + n
	for _, node := range g.next(n) {
		c.provision(ctx, g, &upcoming{node: node, requested: v.now, due: v.now.Add(g.provisioningTime())})
	}
	c.lastScaleUp = v.now
	pods := make([]string, 0, len(o.packing.Placements))
	msg := castatus.TriggeredMessage([]castatus.ScaleUp{{Pool: g.name(), From: from, To: to, Max: g.max()}})
	for _, p := range o.packing.Placements {
		pods = append(pods, p.Pod.Namespace+"/"+p.Pod.Name)
		c.recorder.Event(p.Pod, corev1.EventTypeNormal, castatus.ReasonTriggeredScaleUp, msg)
		delete(c.notified, p.Pod.UID)
	}
	reason := fmt.Sprintf("%s waiting (%s) fit %d new node(s); %s", words.Count(len(pods), "pod"), words.List(pods, 3), n, chose)
	g.lastUp = &castatus.Event{Time: metaTime(v.now), From: from, To: to, Reason: reason}
	c.event(ctx, corev1.EventTypeNormal, castatus.ReasonScaledUpGroup, "Scale-up: setting group %s size to %d instead of %d (max: %d)", g.name(), to, from, g.max())
}

// notTriggered tells a pod no pool grows for it, when the reason is new
// or a minute has passed since it was last told.
func (c *Controller) notTriggered(ctx context.Context, v *view, p *corev1.Pod, why []castatus.NotTriggered) {
	msg := castatus.NotTriggeredMessage(why)
	if last, ok := c.notified[p.UID]; ok && last.message == msg && v.now.Sub(last.at) < notifyAgain {
		return
	}
	c.notified[p.UID] = notice{message: msg, at: v.now}
	c.recorder.Event(p, corev1.EventTypeNormal, castatus.ReasonNotTriggerScaleUp, msg)
}

// notifyAgain is how often a pod that still triggers no scale-up is
// told so again.
const notifyAgain = time.Minute

// unschedulable are the pods the scheduler gave up on, highest priority
// first, as cluster-autoscaler takes them: unbound, not being deleted,
// marked PodScheduled=False/Unschedulable, and old enough for
// newPodScaleUpDelay.
func unschedulable(v *view) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range v.pods {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || finished(p) || p.Status.NominatedNodeName != "" {
			continue
		}
		if v.now.Sub(p.CreationTimestamp.Time) < v.profile.NewPodScaleUpDelay.Duration {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				out = append(out, p)
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := corev1helpers.PodPriority(out[i]), corev1helpers.PodPriority(out[j])
		if a != b {
			return a > b
		}
		return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
	})
	return out
}

// daemonPods are the pods the cluster's DaemonSets would run on a new
// node.
func daemonPods(v *view) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(v.daemonSets))
	for _, ds := range v.daemonSets {
		out = append(out, simulate.DaemonPod(ds))
	}
	return out
}

// simulation is the scheduler's view for this scan: the Ready nodes
// (a young GPU node whose GPUs are not advertised yet counts with
// them), the pods bound to them and, when withUpcoming is set, the
// nodes being provisioned.
func (v *view) simulation(ctx context.Context, withUpcoming bool) (*simulate.Simulator, error) {
	var nodes []*corev1.Node
	gpuRes := map[string]corev1.ResourceName{}
	young := map[string]bool{}
	for _, g := range v.groups {
		for _, n := range g.nodes {
			gpuRes[n.Name] = g.gpuResource()
			young[n.Name] = v.now.Sub(n.CreationTimestamp.Time) < v.profile.MaxNodeProvisionTime.Duration
		}
	}
	for _, n := range v.nodes {
		switch {
		case young[n.Name]:
			// A new node not yet started (not Ready, or its GPUs not yet
			// advertised): cluster-autoscaler counts it as upcoming, so
			// it is the node it will be.
			if !isReady(n) || resourceUnready(n, gpuRes[n.Name]) || hasTaint(n, corev1.TaintNodeNotReady) {
				n = withGPUs(started(n), gpuRes[n.Name])
			}
		case !isReady(n):
			continue
		}
		nodes = append(nodes, n)
	}
	if withUpcoming {
		for _, g := range v.groups {
			for _, u := range g.upcoming {
				nodes = append(nodes, u.node)
			}
		}
	}
	return simulate.New(ctx, simulate.Cluster{Nodes: nodes, Pods: v.pods, Claims: v.claims, Namespaces: v.namespaces, Storage: v.storage})
}
