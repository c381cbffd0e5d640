package spot

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"berth.io/berth/api/v1alpha1"
)

// randomPool is the schedule of one pool's random interruptions.
type randomPool struct {
	// seed seeds rand (0: the clock); rand is nil until the schedule
	// starts.
	seed uint64
	rand *rand.Rand
	mean time.Duration
	next time.Time
}

// rehearse interrupts nodes of the Spot pools whose blueprint asks for
// random interruptions (pools[].spot.meanTimeBetweenInterruptions): one
// node of the pool at a time, at exponentially distributed intervals of
// that mean from the pool's first node, with the pool's notice. It wakes
// when the next interruption is due, on the cluster's clock, and when a
// node or a recorded blueprint changes (a pool's first node starts its
// schedule).
func (c *Controller) rehearse(ctx context.Context) error {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	wake := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	nodes, err := c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: wake.AddFunc, DeleteFunc: wake.DeleteFunc})
	if err != nil {
		return err
	}
	defer c.nodes.RemoveEventHandler(nodes)
	records, err := c.blueprints.Informer().AddEventHandler(wake)
	if err != nil {
		return err
	}
	defer c.blueprints.Informer().RemoveEventHandler(records)
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, records.HasSynced) {
		return nil // stopped first
	}
	schedules := map[string]*randomPool{}
	for {
		next := c.rehearseOnce(ctx, schedules, c.clock.Now())
		var due <-chan time.Time
		var timer clock.Timer
		if !next.IsZero() {
			timer = c.clock.NewTimer(next.Sub(c.clock.Now()))
			due = timer.C()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// rehearseOnce interrupts the nodes whose interruption is due at now, and
// returns when the next one is due (zero when none is scheduled).
func (c *Controller) rehearseOnce(ctx context.Context, schedules map[string]*randomPool, now time.Time) time.Time {
	var next time.Time
	// A record that does not decode is skipped; the autoscaler reports it.
	bps, _ := c.blueprints.Blueprints()
	for _, bp := range bps {
		for i := range bp.Spec.Pools {
			p := &bp.Spec.Pools[i]
			key := bp.Metadata.Name + "/" + p.Name
			if p.Spot == nil || p.Spot.MeanTimeBetweenInterruptions == nil {
				delete(schedules, key)
				continue
			}
			var nodes []corev1.Node
			for _, obj := range c.nodes.GetStore().List() {
				n := obj.(*corev1.Node)
				if n.Labels[v1alpha1.LabelPool] == p.Name && n.Labels[v1alpha1.LabelBlueprint] == bp.Metadata.Name {
					nodes = append(nodes, *n)
				}
			}
			s := schedules[key]
			mean := p.Spot.MeanTimeBetweenInterruptions.Duration
			if s == nil || s.mean != mean {
				s = &randomPool{seed: uint64(p.Spot.Seed), mean: mean}
				schedules[key] = s
			}
			picked := s.due(nodes, now)
			if s.rand != nil && (next.IsZero() || s.next.Before(next)) {
				next = s.next
			}
			if len(picked) == 0 {
				continue
			}
			if err := Interrupt(ctx, c.client, picked, p.SpotNotice(), now); err != nil {
				klog.FromContext(ctx).Error(err, "random spot interruption", "pool", p.Name)
			}
		}
	}
	return next
}

// due returns the node of the pool's nodes to interrupt at now, if an
// interruption is due. The schedule starts with the pool's first node,
// not with the controller: a rehearsal's pool is empty while its cluster
// starts, and how long that takes must not move its interruptions. The
// node is drawn from the nodes in name order, so that the same seed picks
// the same node whatever order the informer lists them in.
func (s *randomPool) due(nodes []corev1.Node, now time.Time) []corev1.Node {
	if s.rand == nil {
		if len(nodes) == 0 {
			return nil
		}
		seed := s.seed
		if seed == 0 {
			seed = uint64(now.UnixNano())
		}
		s.rand = rand.New(rand.NewPCG(seed, seed>>1|1))
		s.next = now.Add(s.interval())
	}
	if now.Before(s.next) {
		return nil
	}
	s.next = now.Add(s.interval())
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	// Empty when the pool is, or every node is going already.
	return Pick(nodes, 1, s.rand.Uint64()|1)
}

// interval is the time to the next interruption: exponential, of mean
// s.mean, as between the events of a Poisson process.
func (s *randomPool) interval() time.Duration {
	return time.Duration(-math.Log(1-s.rand.Float64()) * float64(s.mean))
}
