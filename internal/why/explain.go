package why

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// Explain says why pod is Pending (or that it is not): one verdict with
// its fix, then what each layer says. It reads only s.
func Explain(s *Snapshot, pod *corev1.Pod) Verdict {
	e := &explainer{s: s, pod: pod, c: newCheck(s, pod)}
	return e.explain()
}

type explainer struct {
	s   *Snapshot
	pod *corev1.Pod
	c   *check
	v   Verdict
}

func (e *explainer) add(c *Cause) {
	if c != nil {
		e.v.Causes = append(e.v.Causes, *c)
	}
}

func (e *explainer) explain() Verdict {
	v := &e.v
	v.Pod = e.pod.Namespace + "/" + e.pod.Name
	v.Phase = string(e.pod.Status.Phase)
	if v.Phase == "" {
		v.Phase = string(corev1.PodPending)
	}
	v.Workload = e.workloadOf()
	v.Scheduler = e.schedulerAccount()
	v.Priority = e.c.priorityInfo()
	v.Causes = []Cause{}
	if top, final := e.notScheduling(); top != nil {
		v.Top = *top
		if final {
			return *v
		}
	}
	// The layers around the scheduler: what admission set, and the
	// namespace's quota.
	v.Defaults = e.c.defaults()
	e.add(limitRangeCause(v.Defaults))
	v.Quota = quotaUse(e.s, e.pod.Namespace)
	e.add(quotaCause(v.Quota, e.pod.Namespace))
	e.add(e.ownerEvents())
	e.add(e.otherScheduler())
	e.add(e.priorityCause())

	top := e.pools()
	if e.c.err != nil {
		top = Cause{Layer: LayerScheduler, Code: CauseSimulation, Problem: problem.Problem{Message: "berth could not simulate the scheduler: " + e.c.err.Error(),
			Fix: "the scheduler's own account above is what there is; report the error"}}
	}
	if vol := e.volumes(); vol != nil && e.c.err == nil {
		// The pools were simulated without the volume plugins: while a
		// claim blocks, what they say comes after it.
		v.Causes = append(v.Causes, top)
		top = *vol
	}
	if g, all := e.invisibleGPUs(); g != nil {
		// With no GPU advertised anywhere, no pool is merely full, and a
		// new node would be as blind.
		if all && (top.Code == CauseResources || top.Code == CausePoolCanGrow) {
			v.Causes = append(v.Causes, top)
			top = *g
		} else {
			e.add(g)
		}
	}
	if v.Top.Code == "" {
		v.Top = top
	} else {
		// Gated or nominated: what the pools say is what happens next.
		v.Causes = append(v.Causes, top)
	}
	sort.SliceStable(v.Causes, func(i, j int) bool { return layerRank(v.Causes[i].Layer) < layerRank(v.Causes[j].Layer) })
	return *v
}

func layerRank(l string) int {
	for i, x := range layerOrder {
		if x == l {
			return i
		}
	}
	return len(layerOrder)
}

// notScheduling is the verdict for a pod the scheduler is not deciding
// about; final when nothing else is worth saying.
func (e *explainer) notScheduling() (*Cause, bool) {
	p := e.pod
	switch {
	case p.DeletionTimestamp != nil:
		return &Cause{Layer: LayerPod, Code: CauseNotPending, Problem: problem.Problem{Message: fmt.Sprintf("the pod is being deleted (since %s)", p.DeletionTimestamp.UTC().Format("15:04:05"))}}, true
	case p.Status.Phase != "" && p.Status.Phase != corev1.PodPending:
		msg := fmt.Sprintf("the pod is %s", p.Status.Phase)
		if p.Spec.NodeName != "" {
			msg += " on node " + p.Spec.NodeName
		}
		if p.Status.Reason != "" {
			msg += fmt.Sprintf(" (%s: %s)", p.Status.Reason, p.Status.Message)
		}
		return &Cause{Layer: LayerPod, Code: CauseNotPending, Problem: problem.Problem{Message: msg + ": it is not waiting to be scheduled"}}, true
	case p.Spec.NodeName != "":
		return e.bound(), true
	case len(p.Spec.SchedulingGates) > 0:
		names := make([]string, len(p.Spec.SchedulingGates))
		for i, g := range p.Spec.SchedulingGates {
			names[i] = g.Name
		}
		return &Cause{Layer: LayerPod, Code: CauseGated, Problem: problem.Problem{
			Message: fmt.Sprintf("the pod has scheduling gates %s: the scheduler does not consider it until they are removed", strings.Join(names, ", ")),
			Fix:     "wait for the controller that added them (a queue such as Kueue admits the workload and removes its gate), or remove them from spec.schedulingGates"}}, false
	case p.Status.NominatedNodeName != "":
		return e.nominated(), false
	}
	return nil, false
}

// bound is the verdict for a pod the scheduler has placed: it is the
// kubelet's now.
func (e *explainer) bound() *Cause {
	p := e.pod
	var waiting []string
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			s := fmt.Sprintf("container %s waiting: %s", cs.Name, w.Reason)
			if w.Message != "" {
				s += " (" + w.Message + ")"
			}
			waiting = append(waiting, s)
		}
	}
	for _, ev := range e.s.eventsAbout("Pod", p.Namespace, p.Name, p.UID) {
		if ev.Type == corev1.EventTypeWarning && ev.Reason != "FailedScheduling" {
			waiting = append(waiting, fmt.Sprintf("event %s: %s", ev.Reason, ev.Message))
		}
	}
	msg := fmt.Sprintf("the pod is scheduled to node %s; starting it is the kubelet's job now", p.Spec.NodeName)
	if len(waiting) == 0 {
		return &Cause{Layer: LayerPod, Code: CauseBound, Problem: problem.Problem{Message: msg + ": no container reports a waiting reason yet", Fix: "wait for the kubelet; `kubectl describe pod` shows its progress"}}
	}
	return &Cause{Layer: LayerPod, Code: CauseBound, Problem: problem.Problem{Message: msg + ": " + strings.Join(waiting, "; "), Fix: "fix what the container's waiting reason names (image, volume, config); the scheduler's part is done"}}
}

// nominated is the verdict for a pod that preempted others and waits for
// them to go.
func (e *explainer) nominated() *Cause {
	name := e.pod.Status.NominatedNodeName
	var going []string
	if n, ok := e.s.index().byName[name]; ok {
		for _, p := range n.pods {
			if p.DeletionTimestamp != nil {
				going = append(going, p.Namespace+"/"+p.Name)
			}
		}
	}
	msg := fmt.Sprintf("preemption in progress: the scheduler nominated node %s for the pod and is making room there", name)
	if len(going) > 0 {
		msg += fmt.Sprintf("; victims terminating: %s", words.List(going, 5))
	}
	return &Cause{Layer: LayerPod, Code: CausePreempting, Problem: problem.Problem{Message: msg,
		Fix: "wait: the pod is bound once the victims are gone (their terminationGracePeriodSeconds)"}}
}

func (e *explainer) workloadOf() string {
	ref := controllerOf(e.pod)
	if ref == nil {
		return ""
	}
	for i := range e.s.Workloads {
		w := &e.s.Workloads[i]
		for _, c := range w.Creators {
			if c.UID == ref.UID {
				return w.String()
			}
		}
	}
	return lowerKind(ref.Kind) + "/" + e.pod.Namespace + "/" + ref.Name
}

func (e *explainer) schedulerAccount() *SchedulerAccount {
	a := &SchedulerAccount{}
	for _, c := range e.pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			a.Reason, a.Message = c.Reason, c.Message
		}
	}
	for _, ev := range e.s.eventsAbout("Pod", e.pod.Namespace, e.pod.Name, e.pod.UID) {
		if ev.Reason == "FailedScheduling" || ev.Reason == "Preempted" {
			a.Events = append(a.Events, e.s.eventLine(ev))
		}
	}
	if a.Reason == "" && a.Message == "" && len(a.Events) == 0 {
		return nil
	}
	return a
}

// ownerEvents are the pod's controller's FailedCreate events: siblings
// the controller could not create (a quota, a policy).
func (e *explainer) ownerEvents() *Cause {
	ref := controllerOf(e.pod)
	if ref == nil {
		return nil
	}
	evs := e.s.eventsAbout(ref.Kind, e.pod.Namespace, ref.Name, ref.UID)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Reason == "FailedCreate" {
			l := e.s.eventLine(evs[i])
			return &Cause{Layer: LayerWorkload, Code: CauseOwnerEvents, Problem: problem.Problem{
				Message: fmt.Sprintf("%s %s could not create more pods (FailedCreate x%d, last %s ago): %s", lowerKind(ref.Kind), ref.Name, l.Count, l.Age, l.Message)}}
		}
	}
	return nil
}

// otherScheduler notes a pod that names a scheduler other than
// kube-scheduler: the default one never looks at it.
func (e *explainer) otherScheduler() *Cause {
	name := e.pod.Spec.SchedulerName
	if name == "" || name == corev1.DefaultSchedulerName {
		return nil
	}
	return &Cause{Layer: LayerPod, Code: CauseOtherScheduler, Problem: problem.Problem{
		Message: fmt.Sprintf("the pod names spec.schedulerName %s: kube-scheduler ignores it, and berth's account below is what kube-scheduler would find", name),
		Fix:     fmt.Sprintf("make sure scheduler %s runs, or drop spec.schedulerName", name)}}
}

func (e *explainer) priorityCause() *Cause {
	p := e.v.Priority
	from := "no PriorityClass"
	if p.Class != "" {
		from = "PriorityClass " + p.Class
	}
	return &Cause{Layer: LayerPriority, Code: CausePriority, Problem: problem.Problem{
		Message: fmt.Sprintf("priority %d (%s), preemptionPolicy %s", p.Value, from, p.PreemptionPolicy)}}
}
