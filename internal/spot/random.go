package spot

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"berth.io/berth/api/v1alpha1"
)

// randomPool is the schedule of one pool's random interruptions.
type randomPool struct {
	rand *rand.Rand
	mean time.Duration
	next time.Time
}

// rehearse interrupts nodes of the Spot pools whose blueprint asks for
// random interruptions (pools[].spot.meanTimeBetweenInterruptions): one
// node of the pool at a time, at exponentially distributed intervals of
// that mean, with the pool's notice.
func (c *Controller) rehearse(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.nodes.HasSynced, c.blueprints.HasSynced) {
		return nil // stopped first
	}
	schedules := map[string]*randomPool{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			c.rehearseOnce(ctx, schedules, now)
		}
	}
}

func (c *Controller) rehearseOnce(ctx context.Context, schedules map[string]*randomPool, now time.Time) {
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
			mean := p.Spot.MeanTimeBetweenInterruptions.Duration
			s := schedules[key]
			if s == nil || s.mean != mean {
				seed := uint64(p.Spot.Seed)
				if seed == 0 {
					seed = uint64(now.UnixNano())
				}
				s = &randomPool{rand: rand.New(rand.NewPCG(seed, seed>>1|1)), mean: mean}
				s.next = now.Add(s.interval())
				schedules[key] = s
			}
			if now.Before(s.next) {
				continue
			}
			s.next = now.Add(s.interval())
			var nodes []corev1.Node
			for _, obj := range c.nodes.GetStore().List() {
				n := obj.(*corev1.Node)
				if n.Labels[v1alpha1.LabelPool] == p.Name && n.Labels[v1alpha1.LabelBlueprint] == bp.Metadata.Name {
					nodes = append(nodes, *n)
				}
			}
			picked := Pick(nodes, 1, s.rand.Uint64()|1)
			if len(picked) == 0 {
				continue // the pool is empty, or every node is going already
			}
			if err := Interrupt(ctx, c.client, picked, p.SpotNotice(), now); err != nil {
				klog.FromContext(ctx).Error(err, "random spot interruption", "pool", p.Name)
			}
		}
	}
}

// interval is the time to the next interruption: exponential, of mean
// s.mean, as between the events of a Poisson process.
func (s *randomPool) interval() time.Duration {
	return time.Duration(-math.Log(1-s.rand.Float64()) * float64(s.mean))
}
