package why

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// poolStatus is one pool as the node autoscaler's status ConfigMap
// reports it.
type poolStatus struct {
	target, max, upcoming int
}

// autoscaled is the pool's entry in the autoscaler's status: berth's
// activity record when there is one, else cluster-autoscaler's node
// group health.
func (s *Snapshot) autoscaled(pool string) (poolStatus, bool) {
	if a := s.AutoscalerActivity; a != nil {
		for _, p := range a.Pools {
			if p.Name == pool {
				return poolStatus{target: p.Target, max: p.Max, upcoming: p.Upcoming}, true
			}
		}
	}
	if st := s.Autoscaler; st != nil {
		for _, g := range st.NodeGroups {
			h := g.Health
			if g.Name != pool || h.CloudProviderTarget == nil || h.MaxSize == nil {
				continue
			}
			up := max(*h.CloudProviderTarget-h.NodeCounts.Registered.Total, 0)
			return poolStatus{target: *h.CloudProviderTarget, max: *h.MaxSize, upcoming: up}, true
		}
	}
	return poolStatus{}, false
}

// scaleEvent is the autoscaler's latest word on the pod: a
// TriggeredScaleUp or NotTriggerScaleUp event, or nil.
func (e *explainer) scaleEvent() *corev1.Event {
	evs := e.s.eventsAbout("Pod", e.pod.Namespace, e.pod.Name, e.pod.UID)
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Reason {
		case castatus.ReasonTriggeredScaleUp, castatus.ReasonNotTriggerScaleUp, "ScaleUpFailed":
			return evs[i]
		}
	}
	return nil
}

// scalingUp says how a pool the autoscaler grows for this pod is doing:
// "pool spot-gpu is adding a node for this pod (requested 4s ago; 1
// node upcoming)", or "" when its latest event names no growth of pool.
func (e *explainer) scalingUp(pool string) string {
	ev := e.scaleEvent()
	if ev == nil || ev.Reason != castatus.ReasonTriggeredScaleUp {
		return ""
	}
	ups, ok := castatus.ParseTriggered(ev.Message)
	if !ok {
		return ""
	}
	for _, u := range ups {
		if u.Pool != pool {
			continue
		}
		var when []string
		if l := e.s.eventLine(ev); l.Age != "" {
			when = append(when, "requested "+l.Age+" ago")
		}
		if st, ok := e.s.autoscaled(pool); ok {
			when = append(when, words.Count(st.upcoming, "node")+" upcoming")
		} else {
			when = append(when, fmt.Sprintf("from %d to %d", u.From, u.To))
		}
		return fmt.Sprintf("pool %s is adding a node for this pod (%s)", pool, strings.Join(when, "; "))
	}
	return ""
}

// autoscalerCauses are what the node autoscaler said about the pod that
// the pools layer has not said already: pools it grows for the pod,
// pools at their maximum, and why it grows no other.
func (e *explainer) autoscalerCauses(said map[string]bool) []Cause {
	ev := e.scaleEvent()
	if ev == nil {
		return nil
	}
	l := e.s.eventLine(ev)
	switch ev.Reason {
	case castatus.ReasonTriggeredScaleUp:
		ups, ok := castatus.ParseTriggered(ev.Message)
		if !ok {
			break
		}
		var out []Cause
		for _, u := range ups {
			if said[u.Pool] {
				continue
			}
			out = append(out, Cause{Layer: LayerAutoscale, Code: CauseScalingUp, Problem: problem.Problem{Message: e.scalingUp(u.Pool),
				Fix: fmt.Sprintf("wait for pool %s's new node to be Ready; the scheduler places the pod then", u.Pool)}})
		}
		return out
	case castatus.ReasonNotTriggerScaleUp:
		pools, ok := castatus.ParseNotTriggered(ev.Message)
		if !ok {
			break
		}
		var out []Cause
		for _, p := range pools {
			if said[p.Pool] {
				continue
			}
			if p.Reason == castatus.MaxSizeReached {
				limit := ""
				if st, ok := e.s.autoscaled(p.Pool); ok {
					limit = fmt.Sprintf(" of %d", st.max)
				}
				out = append(out, Cause{Layer: LayerAutoscale, Code: CausePoolAtMax, Problem: problem.Problem{
					Message: fmt.Sprintf("pool %s is at its maximum%s: the autoscaler will not grow it (NotTriggerScaleUp, %s ago)", p.Pool, limit, l.Age),
					Fix:     fmt.Sprintf("raise pool %s's autoscale.max in the blueprint", p.Pool)}})
				continue
			}
			out = append(out, Cause{Layer: LayerAutoscale, Code: CauseAutoscaler, Problem: problem.Problem{
				Message: fmt.Sprintf("the autoscaler will not grow pool %s for this pod: %s", p.Pool, p.Reason)}})
		}
		return out
	}
	return []Cause{{Layer: LayerAutoscale, Code: CauseAutoscaler, Problem: problem.Problem{Message: fmt.Sprintf("the cluster autoscaler said %s: %s", ev.Reason, ev.Message)}}}
}
