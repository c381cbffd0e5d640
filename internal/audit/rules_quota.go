package audit

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

// checkQuotaHeldWaiting: with a blueprint that queues with
// ResourceQuota, a team's GPU quota that the Pending pods of one of its
// classes can hold while the team's other GPU pools stand idle. A
// Pending pod counts against its quota; a class whose GPU pods can wait
// only for pools that other work fills (another team's classes reach
// them, or they hold fewer GPUs than the quota) can take the whole quota
// by waiting, and the team's work for its other pools cannot start.
func (v *view) checkQuotaHeldWaiting() {
	if len(v.opts.Teams) == 0 || v.opts.Queueing == v1alpha1.QueueingKueue {
		return
	}
	spec := &v1alpha1.Spec{Pools: v.opts.Pools, Classes: v.opts.Classes, Teams: v.opts.Teams}
	key := corev1.ResourceName("requests." + v1alpha1.DefaultGPUResource)
	for i := range v.inv.ResourceQuotas {
		q := &v.inv.ResourceQuotas[i]
		hard, ok := q.Spec.Hard[key]
		if !ok || hard.Sign() <= 0 {
			continue
		}
		t := v.teamOf(q.Namespace)
		if t == nil {
			continue
		}
		reach := spec.QueueGPUPools(t)
		for c := range slices.Values(v.opts.Classes) {
			if len(t.Classes) > 0 && !slices.Contains(t.Classes, c.Name) {
				continue
			}
			var waits, idle []string
			var capacity int64
			for _, p := range reach {
				if slices.Contains(c.Pools, p.Name) {
					waits = append(waits, p.Name)
					capacity += p.MaxGPUs()
				} else {
					idle = append(idle, p.Name)
				}
			}
			if len(waits) == 0 || len(idle) == 0 {
				continue
			}
			because := v.sharers(spec, t, waits)
			if because == "" {
				if capacity >= hard.Value() {
					continue // the team fills its quota before they fill
				}
				because = fmt.Sprintf("fewer than this quota's %s", hard.String())
			}
			v.add(v1alpha1.RuleQuotaHeldWaiting, Object{Kind: "ResourceQuota", Namespace: q.Namespace, Name: q.Name}, fmt.Sprintf("spec.hard[%q]", key),
				fmt.Sprintf("team %s's pods of class %s can wait only for %s (%d GPUs at most; %s), and while they wait Pending they count against this quota and can take all %s of its GPUs, so the team's work for %s, which those pods cannot use, cannot start",
					t.Name, c.Name, poolList(waits), capacity, because, hard.String(), poolList(idle)),
				fmt.Sprintf("add %s to class %s's pools, or queue with Kueue (spec.queueing: Kueue), where work waits suspended and holds no quota", strings.Join(idle, " and "), c.Name))
		}
	}
}

// teamOf is the blueprint's team that owns namespace ns, or nil.
func (v *view) teamOf(ns string) *v1alpha1.Team {
	for i := range v.opts.Teams {
		if slices.Contains(v.opts.Teams[i].Namespaces, ns) {
			return &v.opts.Teams[i]
		}
	}
	return nil
}

// sharers says which other teams' classes reach one of pools, or "".
func (v *view) sharers(spec *v1alpha1.Spec, t *v1alpha1.Team, pools []string) string {
	var others []string
	for i := range v.opts.Teams {
		o := &v.opts.Teams[i]
		if o.Name == t.Name {
			continue
		}
		if slices.ContainsFunc(spec.QueueGPUPools(o), func(p *v1alpha1.Pool) bool { return slices.Contains(pools, p.Name) }) {
			others = append(others, o.Name)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return fmt.Sprintf("%s's classes use it too", strings.Join(others, " and "))
}

func poolList(pools []string) string {
	if len(pools) == 1 {
		return "pool " + pools[0]
	}
	return "pools " + strings.Join(pools, " and ")
}
