package why

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// ExplainWorkload says why a workload's pods are not running: its first
// Pending pod explained, or, when it could not create them, the reason
// its controller gave (a quota refusal, with used and hard). When an HPA
// holds it where it is (at zero, at its maximum, or unable to read its
// metric), that is said too: as the verdict when no pod is Pending.
func ExplainWorkload(s *Snapshot, w *Workload) Verdict {
	v := explainWorkload(s, w)
	hc, ok := s.hpaCause(w)
	if !ok {
		return v
	}
	if v.Top.Code == CauseNotPending {
		v.Causes = append(v.Causes, Cause{Layer: LayerWorkload, Code: CauseWorkload, Problem: problem.Problem{Message: v.Top.Message}})
		v.Top = hc
		return v
	}
	v.Causes = append(v.Causes, hc)
	return v
}

func explainWorkload(s *Snapshot, w *Workload) Verdict {
	pods := s.podsOf(w)
	for _, p := range pods {
		if p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil {
			v := Explain(s, p)
			v.Workload = w.String()
			msg := fmt.Sprintf("%s has %d pod(s), %d Pending; explaining %s", w.String(), len(pods), countPending(pods), p.Name)
			if w.Desired >= 0 {
				msg = fmt.Sprintf("%s wants %d pod(s) and has %d, %d Pending; explaining %s", w.String(), w.Desired, len(pods), countPending(pods), p.Name)
			}
			v.Causes = append([]Cause{{Layer: LayerWorkload, Code: CauseWorkload, Problem: problem.Problem{Message: msg}}}, v.Causes...)
			return v
		}
	}
	v := Verdict{Workload: w.String(), Causes: []Cause{}}
	if qc, ok := queueCause(w); ok {
		// Kueue's quota holds it, not the namespace's ResourceQuotas:
		// their use (a class's pods 0/0, say) would only mislead.
		v.Top = qc
		return v
	}
	v.Quota = quotaUse(s, w.Namespace)
	missing := w.Desired < 0 || int32(len(pods)) < w.Desired
	if ev := s.lastFailedCreate(w); ev != nil && missing && !w.Done {
		v.Top = s.createFailure(w, ev, len(pods))
		return v
	}
	running := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	msg := fmt.Sprintf("%s has %d pod(s), %d Running, none Pending", w.String(), len(pods), running)
	switch {
	case w.Done:
		msg = fmt.Sprintf("%s has finished", w.String())
	case w.Desired >= 0 && int32(len(pods)) < w.Desired:
		msg += fmt.Sprintf(", of %d wanted; its controller reports no failure to create the rest", w.Desired)
	}
	v.Top = Cause{Layer: LayerWorkload, Code: CauseNotPending, Problem: problem.Problem{Message: msg}}
	return v
}

func countPending(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodPending {
			n++
		}
	}
	return n
}

// podsOf are the workload's pods (those its creators control), oldest
// first.
func (s *Snapshot) podsOf(w *Workload) []*corev1.Pod {
	uids := map[types.UID]bool{}
	for _, c := range w.Creators {
		uids[c.UID] = true
	}
	var out []*corev1.Pod
	for i := range s.Pods {
		p := &s.Pods[i]
		if ref := controllerOf(p); ref != nil && p.Namespace == w.Namespace && uids[ref.UID] {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	return out
}

// lastFailedCreate is the newest FailedCreate event of the workload's
// creators.
func (s *Snapshot) lastFailedCreate(w *Workload) *corev1.Event {
	var last *corev1.Event
	for _, c := range w.Creators {
		for _, ev := range s.eventsAbout(c.Kind, w.Namespace, c.Name, c.UID) {
			if ev.Reason == "FailedCreate" && (last == nil || !eventTime(ev).Before(eventTime(last))) {
				last = ev
			}
		}
	}
	return last
}

// createFailure is the verdict for a workload whose controller cannot
// create pods: a quota refusal in numbers with the fix, or the refusal
// quoted.
func (s *Snapshot) createFailure(w *Workload, ev *corev1.Event, have int) Cause {
	l := s.eventLine(ev)
	by := fmt.Sprintf("%s %s", lowerKind(ev.InvolvedObject.Kind), ev.InvolvedObject.Name)
	seen := fmt.Sprintf("FailedCreate x%d", l.Count)
	if l.Age != "" {
		seen += ", last " + l.Age + " ago"
	}
	if w.Desired >= 0 {
		seen = fmt.Sprintf("%d of %d pods exist, %s", have, w.Desired, seen)
	}
	r := parseQuotaRefusal(ev.Message)
	if r == nil {
		return Cause{Layer: LayerWorkload, Code: CauseCreateFailed, Problem: problem.Problem{
			Message: fmt.Sprintf("%s cannot create pods: %s (%s)", by, ev.Message, seen),
			Fix:     "fix what the refusal names; admission refused the pod before it existed, so no scheduler ever saw it"}}
	}
	msg := fmt.Sprintf("%s cannot create pods: ResourceQuota %s refuses them: %s (%s)", by, r.quota, r.String(), seen)
	var fixes []string
	var held []string
	for _, res := range r.resources {
		if h := holders(s, w.Namespace, res); len(h) > 0 {
			held = append(held, fmt.Sprintf("%s is held by %s", res, words.List(h, 4)))
		}
	}
	if len(held) > 0 {
		msg += "; " + strings.Join(held, "; ")
	}
	fixes = append(fixes, "lower the pods' requests", "free quota (delete or finish pods that hold it; Pending pods count too)")
	raise := fmt.Sprintf("raise ResourceQuota %s's spec.hard", r.quota)
	if t := teamOf(s.Blueprint, w.Namespace); t != nil {
		var fields []string
		for _, res := range r.resources {
			if f := blueprintQuotaField(res); f != "" && !contains(fields, f) {
				fields = append(fields, f)
			}
		}
		if len(fields) > 0 {
			raise = fmt.Sprintf("raise team %s's %s in the blueprint and `berth apply`", t.Name, strings.Join(fields, ", "))
		}
	}
	fixes = append(fixes, raise)
	return Cause{Layer: LayerQuota, Code: CauseQuotaExceeded, Problem: problem.Problem{Message: msg, Fix: strings.Join(fixes, "; or ")}}
}
