package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
)

// Queueing names what holds a team's work to its quota.
type Queueing string

const (
	// QueueingResourceQuota is Kubernetes' ResourceQuota per team
	// namespace: a pod over the quota is refused, and a Pending pod
	// holds its share of the quota while it waits.
	QueueingResourceQuota Queueing = "ResourceQuota"
	// QueueingKueue is Kueue (kueue.x-k8s.io, the release berth builds
	// against: KueueVersion): a Job waits suspended, holding nothing,
	// until its team's ClusterQueue admits it on a flavor of capacity
	// (a GPU pool); teams lend what they do not use and reclaim it.
	QueueingKueue Queueing = "Kueue"
)

// KueueVersion is the Kueue release whose API berth's objects are
// written for and whose controllers berth builds against.
const KueueVersion = "v0.17.1"

// AnyPoolFlavor is the ResourceFlavor under which a team's CPU and
// memory are counted wherever its pods run, as its ResourceQuota counts
// them; it has no node labels, so it never steers a pod.
const AnyPoolFlavor = "default-flavor"

// UsesKueue reports whether Kueue queues the blueprint's teams.
func (s *Spec) UsesKueue() bool { return s.Queueing == QueueingKueue }

// TeamQueue is how a team queues under queueing: Kueue. Kueue counts
// quota per flavor of capacity and lends and borrows per flavor, so
// the team's GPUs are split across the GPU pools, and its limits apply
// to each pool.
type TeamQueue struct {
	// GPUs splits the team's quota.gpu across the GPU pools, one entry
	// per pool, in the order Kueue tries them. The counts add up to
	// quota.gpu; a GPU pool the team's classes reach that is left out
	// comes last with none of its own (the team may still borrow
	// there). Empty means every GPU pool the team's classes reach, spot
	// pools first, each with a share in proportion to the most GPUs it
	// can hold.
	GPUs []PoolGPUs `json:"gpus,omitempty"`
	// Borrow is the most GPUs of each pool the team may use beyond its
	// own, out of what the other teams leave unused (Kueue's
	// borrowingLimit). Nil means as many as they leave; 0 never borrows.
	Borrow *resource.Quantity `json:"borrow,omitempty"`
	// Lend is the most of its own GPUs on each pool the team lends the
	// other teams while it does not use them (Kueue's lendingLimit).
	// Nil means all of them; 0 lends none.
	Lend *resource.Quantity `json:"lend,omitempty"`
	// Weight is the team's weight under spec.fairSharing (Kueue's
	// fairSharing.weight): its share of what the teams leave unused is
	// its borrowing divided by it. Nil means 1; 0 means the team always
	// comes last.
	Weight *resource.Quantity `json:"weight,omitempty"`
}

// PoolGPUs is a team's nominal quota of GPUs on one pool.
type PoolGPUs struct {
	Pool  string `json:"pool"`
	Count int64  `json:"count"`
}

// QueueGPUPools are the GPU pools a team can queue for under Kueue: the
// User pools with the quota's GPU resource that one of the team's
// classes reaches, spot pools first, each kind in the blueprint's order.
func (s *Spec) QueueGPUPools(t *Team) []*Pool {
	reach := sets.New[string]()
	for i := range s.Classes {
		c := &s.Classes[i]
		if len(t.Classes) == 0 || slices.Contains(t.Classes, c.Name) {
			reach.Insert(c.Pools...)
		}
	}
	var spot, onDemand []*Pool
	for i := range s.Pools {
		p := &s.Pools[i]
		if p.Mode != ModeUser || p.GPUResource() != DefaultGPUResource || !reach.Has(p.Name) {
			continue
		}
		if p.Capacity == Spot {
			spot = append(spot, p)
		} else {
			onDemand = append(onDemand, p)
		}
	}
	return append(spot, onDemand...)
}

// TeamGPUs is a team's GPU quota by pool under Kueue: queue.gpus as
// written, then none on the other QueueGPUPools (so that the team may
// still borrow there); else quota.gpu shared among QueueGPUPools in
// proportion to the most GPUs each can hold (largest remainders get the
// GPUs left over, ties to the earlier pool). A team without a GPU quota
// has none.
func (s *Spec) TeamGPUs(t *Team) []PoolGPUs {
	pools := s.QueueGPUPools(t)
	if t.Queue != nil && len(t.Queue.GPUs) > 0 {
		out := slices.Clone(t.Queue.GPUs)
		for _, p := range pools {
			if !slices.ContainsFunc(out, func(g PoolGPUs) bool { return g.Pool == p.Name }) {
				out = append(out, PoolGPUs{Pool: p.Name})
			}
		}
		return out
	}
	if t.Quota == nil || t.Quota.GPU == nil || len(pools) == 0 {
		return nil
	}
	quota := t.Quota.GPU.Value()
	var total int64
	capacity := make([]int64, len(pools))
	for i, p := range pools {
		capacity[i] = p.MaxGPUs()
		total += capacity[i]
	}
	out := make([]PoolGPUs, len(pools))
	remainder := make([]int64, len(pools))
	var given int64
	for i, p := range pools {
		out[i] = PoolGPUs{Pool: p.Name}
		if total > 0 {
			out[i].Count = quota * capacity[i] / total
			remainder[i] = quota * capacity[i] % total
		}
		given += out[i].Count
	}
	order := make([]int, len(pools))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(remainder[b] - remainder[a]) })
	for _, i := range order {
		if given >= quota {
			break
		}
		out[i].Count++
		given++
	}
	return out
}

// validateQueueing checks spec.queueing and each team's queue.
func validateQueueing(spec *field.Path, s *Spec) (errs, warnings problem.List) {
	if s.Queueing != "" {
		if e := oneOf(spec.Child("queueing"), string(s.Queueing), QueueingResourceQuota, QueueingKueue); len(e) > 0 {
			return e, nil // the teams' queues mean nothing until it is one of them
		}
	}
	errs, warnings = validateFairSharing(spec, s)
	pools := map[string]*Pool{}
	for i := range s.Pools {
		pools[s.Pools[i].Name] = &s.Pools[i]
	}
	if s.UsesKueue() {
		if _, taken := pools[AnyPoolFlavor]; taken {
			errs = append(errs, invalid(spec.Child("pools"), fmt.Sprintf("a pool is named %q, the ResourceFlavor under which Kueue counts every team's CPU and memory", AnyPoolFlavor), "rename the pool"))
		}
		// Kueue admits only what its ClusterQueues cover, and berth's
		// cover quota.gpu's resource alone.
		for i := range s.Classes {
			for j, name := range s.Classes[i].Pools {
				if p, ok := pools[name]; ok && p.GPUResource() != "" && p.GPUResource() != DefaultGPUResource {
					errs = append(errs, invalid(spec.Child("classes").Index(i).Child("pools").Index(j),
						fmt.Sprintf("pool %q's GPUs are %s, but under Kueue the teams' ClusterQueues cover only %s (quota.gpu), so Kueue would never admit this class's GPU work there", name, p.GPUResource(), DefaultGPUResource),
						"use pools with "+DefaultGPUResource+", or queueing: ResourceQuota"))
				}
			}
		}
	}
	// What each pool's teams lend at most, for the borrowing check.
	lendable := map[string]int64{}
	for i := range s.Teams {
		t := &s.Teams[i]
		for _, g := range s.TeamGPUs(t) {
			n := g.Count
			if t.Queue != nil && t.Queue.Lend != nil {
				n = min(n, t.Queue.Lend.Value())
			}
			lendable[g.Pool] += n
		}
	}
	for i := range s.Teams {
		t := &s.Teams[i]
		tp := spec.Child("teams").Index(i)
		qp := tp.Child("queue")
		if s.UsesKueue() && t.Quota != nil && t.Quota.GPU != nil && t.Quota.GPU.Sign() > 0 && len(s.QueueGPUPools(t)) == 0 {
			warnings = append(warnings, warning(tp.Child("quota", "gpu"), "none of the team's classes reaches a GPU pool, so Kueue has no flavor to admit its GPU work on", "add a GPU pool to one of the team's classes"))
		}
		if t.Queue == nil {
			continue
		}
		if !s.UsesKueue() {
			warnings = append(warnings, warning(qp, "only Kueue reads a team's queue; under ResourceQuota it does nothing", "set spec.queueing: Kueue, or remove it"))
			continue
		}
		reach := map[string]bool{}
		var reachNames []string
		for _, p := range s.QueueGPUPools(t) {
			reach[p.Name] = true
			reachNames = append(reachNames, p.Name)
		}
		var sum int64
		seen := sets.New[string]()
		for j, g := range t.Queue.GPUs {
			gp := qp.Child("gpus").Index(j)
			sum += g.Count
			p, ok := pools[g.Pool]
			switch {
			case !ok:
				fix := "name one of the team's GPU pools: " + strings.Join(reachNames, ", ")
				if a, ok := suggest(g.Pool, reachNames...); ok {
					fix = fmt.Sprintf("did you mean %q?", a)
				}
				errs = append(errs, invalid(gp.Child("pool"), fmt.Sprintf("no pool is named %q, so Kueue would have no flavor for it", g.Pool), fix))
			case p.GPUResource() != DefaultGPUResource || p.Mode != ModeUser:
				errs = append(errs, invalid(gp.Child("pool"), fmt.Sprintf("pool %q is not a User pool with %s, the resource quota.gpu counts", g.Pool, DefaultGPUResource), "name one of the team's GPU pools: "+strings.Join(reachNames, ", ")))
			case !reach[g.Pool]:
				warnings = append(warnings, warning(gp.Child("pool"), fmt.Sprintf("none of the team's classes reaches pool %q, so these GPUs can only be lent", g.Pool), "add the pool to one of the team's classes, or give the GPUs to "+strings.Join(reachNames, ", ")))
			}
			if seen.Has(g.Pool) {
				errs = append(errs, duplicate(gp.Child("pool"), g.Pool))
			}
			seen.Insert(g.Pool)
			if g.Count < 0 {
				errs = append(errs, invalid(gp.Child("count"), "must not be negative", ""))
			}
		}
		if len(t.Queue.GPUs) > 0 {
			var quota int64
			if t.Quota != nil && t.Quota.GPU != nil {
				quota = t.Quota.GPU.Value()
			}
			if sum != quota {
				errs = append(errs, invalid(qp.Child("gpus"), fmt.Sprintf("the pools' counts add up to %d, but quota.gpu is %d", sum, quota), "make them add up to quota.gpu, or leave gpus out to split it by the pools' sizes"))
			}
		}
		for _, lim := range []struct {
			name string
			q    *resource.Quantity
		}{{"borrow", t.Queue.Borrow}, {"lend", t.Queue.Lend}} {
			if lim.q == nil {
				continue
			}
			if lim.q.Sign() < 0 || lim.q.Value()*1000 != lim.q.MilliValue() {
				errs = append(errs, invalid(qp.Child(lim.name), "must be a whole number of GPUs, 0 or more", ""))
			}
		}
		if b := t.Queue.Borrow; b != nil && len(s.Teams) < 2 && b.Sign() > 0 {
			warnings = append(warnings, warning(qp.Child("borrow"), "the team is alone in its cohort, so there is nothing to borrow", "remove it, or add the teams that share the GPUs"))
		}
		if b := t.Queue.Borrow; b != nil && b.Sign() > 0 && len(s.Teams) > 1 {
			// The most the other teams could lend on any of this team's pools.
			var most int64
			var where string
			for _, g := range s.TeamGPUs(t) {
				own := g.Count
				if t.Queue.Lend != nil {
					own = min(own, t.Queue.Lend.Value())
				}
				if others := lendable[g.Pool] - own; others > most || where == "" {
					most, where = others, g.Pool
				}
			}
			if b.Value() > most {
				errs = append(errs, invalid(qp.Child("borrow"), fmt.Sprintf("the other teams lend at most %d GPUs on any of this team's pools (%d on %s), so a limit of %d can never be reached", most, most, where, b.Value()), fmt.Sprintf("lower it to %d, or leave it out to borrow whatever they leave unused", most)))
			}
		}
	}
	return errs, warnings
}

// validateFairSharing checks spec.fairSharing and the teams' weights:
// fair sharing is Kueue's, and a weight means nothing without it.
func validateFairSharing(spec *field.Path, s *Spec) (errs, warnings problem.List) {
	if s.FairSharing && !s.UsesKueue() {
		errs = append(errs, invalid(spec.Child("fairSharing"), "is Kueue's fair sharing, but the teams queue with ResourceQuota", "set spec.queueing: Kueue, or remove fairSharing"))
	}
	for i := range s.Teams {
		q := s.Teams[i].Queue
		if q == nil || q.Weight == nil {
			continue
		}
		wp := spec.Child("teams").Index(i).Child("queue", "weight")
		switch {
		case q.Weight.Sign() < 0:
			errs = append(errs, invalid(wp, "must not be negative", "give 0 (always last) or more"))
		case !s.FairSharing && s.UsesKueue():
			warnings = append(warnings, warning(wp, "only fair sharing reads a team's weight, and spec.fairSharing is off", "set spec.fairSharing: true, or remove the weight"))
		}
	}
	return errs, warnings
}
