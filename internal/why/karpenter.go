package why

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/problem"
)

// Karpenter's words on a pod: the events its provisioner records, with
// its component name, reasons and message prefixes
// (sigs.k8s.io/karpenter pkg/controllers/provisioning/scheduling/events.go).
const (
	karpenterComponent        = "karpenter"
	karpenterNominated        = "Nominated"
	karpenterFailedScheduling = "FailedScheduling"
	karpenterNominatedPrefix  = "Pod should schedule on: "
	karpenterFailedPrefix     = "Failed to schedule pod, "
)

// karpenterCauses are what Karpenter last said about the pod: the
// NodeClaim it launched for it, or why no NodePool can take it.
func (e *explainer) karpenterCauses() []Cause {
	evs := e.s.eventsAbout("Pod", e.pod.Namespace, e.pod.Name, e.pod.UID)
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if !fromKarpenter(ev) {
			continue
		}
		age := e.s.eventLine(ev).Age
		switch ev.Reason {
		case karpenterNominated:
			return []Cause{{Layer: LayerAutoscale, Code: CauseScalingUp, Problem: problem.Problem{
				Message: fmt.Sprintf("Karpenter is launching a NodeClaim for this pod: it should schedule on %s (%s ago)", strings.TrimPrefix(ev.Message, karpenterNominatedPrefix), age),
				Fix:     "wait for the NodeClaim's node to be Ready and initialized; the scheduler places the pod then (berth status lists the NodeClaims)"}}}
		case karpenterFailedScheduling:
			return []Cause{{Layer: LayerAutoscale, Code: CauseAutoscaler, Problem: problem.Problem{
				Message: fmt.Sprintf("no Karpenter NodePool can take this pod (%s ago): %s", age, strings.TrimPrefix(ev.Message, karpenterFailedPrefix)),
				Fix:     "in the blueprint, let the pod's class into a pool that fits it (a NodePool's requirements, labels and taints are its pool's), or raise the pool's autoscale.max, which sets its NodePool's limits"}}}
		}
	}
	return nil
}

// fromKarpenter reports whether Karpenter recorded the event.
func fromKarpenter(ev *corev1.Event) bool {
	return ev.Source.Component == karpenterComponent || ev.ReportingController == karpenterComponent
}
