package why

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/internal/status/hpastatus"
	"berth.io/berth/internal/words"
)

// The HPA controller's condition reasons berth explains (k8s.io/kubernetes
// pkg/controller/podautoscaler/horizontal.go).
const (
	reasonScalingDisabled   = "ScalingDisabled"
	reasonInvalidSelector   = "InvalidSelector"
	reasonAmbiguousSelector = "AmbiguousSelector"
	reasonTooManyReplicas   = "TooManyReplicas"
)

// failedMetric maps ScalingActive=False reasons to the metric source
// they are about and the metrics API that serves it.
var failedMetric = map[string]struct {
	source autoscalingv2.MetricSourceType
	api    string
}{
	"FailedGetExternalMetric":          {autoscalingv2.ExternalMetricSourceType, "v1beta1.external.metrics.k8s.io"},
	"FailedGetPodsMetric":              {autoscalingv2.PodsMetricSourceType, "v1beta2.custom.metrics.k8s.io"},
	"FailedGetObjectMetric":            {autoscalingv2.ObjectMetricSourceType, "v1beta2.custom.metrics.k8s.io"},
	"FailedGetResourceMetric":          {autoscalingv2.ResourceMetricSourceType, "v1beta1.metrics.k8s.io"},
	"FailedGetContainerResourceMetric": {autoscalingv2.ContainerResourceMetricSourceType, "v1beta1.metrics.k8s.io"},
}

// hpaOf is the HPA whose scaleTargetRef names the workload, or nil.
func (s *Snapshot) hpaOf(w *Workload) *autoscalingv2.HorizontalPodAutoscaler {
	for i := range s.HPAs {
		if h := &s.HPAs[i]; h.Namespace == w.Namespace && hpastatus.Scaled(h, w.Kind, w.Name) {
			return h
		}
	}
	return nil
}

// hpaCause says why the HPA that scales the workload holds it where it
// is: it cannot scale it, cannot read its metric, or keeps it at zero
// or at its maximum. ok is false when no HPA scales the workload or it
// scales freely within its range.
func (s *Snapshot) hpaCause(w *Workload) (c Cause, ok bool) {
	h := s.hpaOf(w)
	if h == nil {
		return Cause{}, false
	}
	name := "HPA " + h.Namespace + "/" + h.Name
	target := hpastatus.Target(h)
	cond := func(t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
		x := hpastatus.Condition(h, t)
		return fmt.Sprintf("%s=%s %s: %s", t, x.Status, x.Reason, hpastatus.Tidy(x.Message))
	}
	metrics := hpastatus.Metrics(h)
	// Where the workload is comes from the workload: the HPA's
	// status.currentReplicas is what it saw at its last sync, before the
	// rescale it made then. --all reads no workload (Desired -1).
	current, max := w.Desired, h.Spec.MaxReplicas
	if current < 0 {
		current = h.Status.CurrentReplicas
	}
	c.Layer = LayerHPA

	if x := hpastatus.Condition(h, autoscalingv2.AbleToScale); x != nil && x.Status == corev1.ConditionFalse {
		c.Code = CauseHPACannotScale
		c.Message = fmt.Sprintf("%s cannot scale %s (%s)", name, target, cond(autoscalingv2.AbleToScale))
		c.Fix = fmt.Sprintf("check spec.scaleTargetRef names %s in namespace %s (kind, name and apiVersion), and that nothing refuses its scale subresource", target, h.Namespace)
		return c, true
	}
	if x := hpastatus.Condition(h, autoscalingv2.ScalingActive); x != nil && x.Status == corev1.ConditionFalse {
		switch f, isMetric := failedMetric[x.Reason]; {
		case isMetric:
			m := failing(metrics, f.source)
			c.Code = CauseHPAMetric
			c.Message = fmt.Sprintf("%s cannot read its metric %s (target %s), so it holds %s at %s (%s)",
				name, m.Name, m.TargetString(), target, words.Count(int(current), "replica"), cond(autoscalingv2.ScalingActive))
			c.Fix = fmt.Sprintf("is the metrics API registered and Available? `kubectl get apiservice %s`; does it serve %s? %s",
				f.api, m.Name, rawQuery(h.Namespace, f.source, m))
			if strings.Contains(x.Message, "did not receive metrics for targeted pods") || strings.Contains(x.Message, "no pods returned by selector") {
				c.Fix = "the target's pods report no metrics until they are Ready: see why they are not (`berth why " + target + "`); else " + c.Fix
			}
			if strings.Contains(x.Message, "missing request for") {
				c.Fix = "a utilization target is a percentage of the pods' requests: give every container a request for " + m.Name
			}
			return c, true
		case x.Reason == reasonScalingDisabled:
			c.Code = CauseHPADisabled
			c.Message = fmt.Sprintf("%s does not scale %s: its replicas are 0 and it did not put them there (%s)", name, target, cond(autoscalingv2.ScalingActive))
			c.Fix = fmt.Sprintf("`kubectl scale %s -n %s --replicas=1` hands it back to the HPA", target, h.Namespace)
			if hpastatus.MinReplicas(h) == 0 && !wakes(metrics) {
				c.Fix = fmt.Sprintf("an HPA wakes a workload from zero only on an External or Object metric (a queue's depth): add one, or set spec.minReplicas to 1 and `kubectl scale %s -n %s --replicas=1`", target, h.Namespace)
			}
			return c, true
		case x.Reason == reasonInvalidSelector || x.Reason == reasonAmbiguousSelector:
			c.Code = CauseHPASelector
			c.Message = fmt.Sprintf("%s cannot tell which pods are %s's (%s)", name, target, cond(autoscalingv2.ScalingActive))
			c.Fix = fmt.Sprintf("give %s a selector that matches its pods, and let only one HPA scale them", target)
			return c, true
		default:
			c.Code = CauseHPAMetric
			c.Message = fmt.Sprintf("%s is not scaling %s (%s)", name, target, cond(autoscalingv2.ScalingActive))
			return c, true
		}
	}
	if current == 0 && hpastatus.MinReplicas(h) == 0 {
		c.Code = CauseHPAAtZero
		c.Message, c.Fix = s.atZero(h, metrics)
		return c, true
	}
	if max > 0 && current >= max {
		c.Code = CauseHPAAtMax
		var asks []string
		for _, m := range metrics {
			if n := m.Wants(h.Status.CurrentReplicas); n >= 0 {
				asks = append(asks, fmt.Sprintf("%s asks for %d", m, n))
			} else {
				asks = append(asks, m.String())
			}
		}
		c.Message = fmt.Sprintf("%s holds %s at its maximum of %d: %s", name, target, max, strings.Join(asks, "; "))
		if x := hpastatus.Condition(h, autoscalingv2.ScalingLimited); x != nil {
			c.Message += " (" + cond(autoscalingv2.ScalingLimited) + ")"
		}
		if r := s.lastRescale(h); r != "" {
			c.Message += "; last rescale " + r
		}
		c.Fix = s.raiseMax(h, w)
		return c, true
	}
	return Cause{}, false
}

// failing is the metric of the source a FailedGet*Metric reason is
// about: the first without a current value.
func failing(metrics []hpastatus.Metric, source autoscalingv2.MetricSourceType) hpastatus.Metric {
	var first *hpastatus.Metric
	for i := range metrics {
		if metrics[i].Type != source {
			continue
		}
		if !metrics[i].Known {
			return metrics[i]
		}
		if first == nil {
			first = &metrics[i]
		}
	}
	if first != nil {
		return *first
	}
	return hpastatus.Metric{Type: source, Name: string(source) + " metric"}
}

// rawQuery is the kubectl command that reads the metric as the HPA
// controller does.
func rawQuery(ns string, source autoscalingv2.MetricSourceType, m hpastatus.Metric) string {
	name, _, _ := strings.Cut(m.Name, "{")
	switch source {
	case autoscalingv2.ExternalMetricSourceType:
		return fmt.Sprintf("`kubectl get --raw /apis/external.metrics.k8s.io/v1beta1/namespaces/%s/%s`", ns, name)
	case autoscalingv2.PodsMetricSourceType:
		return fmt.Sprintf("`kubectl get --raw '/apis/custom.metrics.k8s.io/v1beta2/namespaces/%s/pods/*/%s'`", ns, name)
	case autoscalingv2.ObjectMetricSourceType:
		return "`kubectl get --raw /apis/custom.metrics.k8s.io/v1beta2` lists what it serves"
	}
	return fmt.Sprintf("`kubectl top pods -n %s`", ns)
}

// wakes reports whether a metric can wake a workload from zero: the
// HPAScaleToZero gate computes only External and Object metrics there.
func wakes(metrics []hpastatus.Metric) bool {
	for _, m := range metrics {
		if m.Type == autoscalingv2.ExternalMetricSourceType || m.Type == autoscalingv2.ObjectMetricSourceType {
			return true
		}
	}
	return false
}

// atZero says why an HPA with minReplicas 0 keeps its target at zero:
// its queue (or other external metric) is empty.
func (s *Snapshot) atZero(h *autoscalingv2.HorizontalPodAutoscaler, metrics []hpastatus.Metric) (msg, fix string) {
	var parts, fixes []string
	for _, m := range metrics {
		if m.Type != autoscalingv2.ExternalMetricSourceType && m.Type != autoscalingv2.ObjectMetricSourceType {
			continue
		}
		kind := "external"
		if m.Type == autoscalingv2.ObjectMetricSourceType {
			kind = "object"
		}
		q := m.Queue()
		switch {
		case !m.Known:
			parts = append(parts, fmt.Sprintf("%s metric %s has no value yet", kind, m.Name))
		case m.Current <= 0 && q != "":
			parts = append(parts, fmt.Sprintf("%s metric %s is 0 — the queue is empty", kind, m.Name))
		case m.Current <= 0:
			parts = append(parts, fmt.Sprintf("%s metric %s is 0", kind, m.Name))
		default:
			parts = append(parts, fmt.Sprintf("%s metric %s is %s (target %s): it scales up at its next sync", kind, m.Name, m.Value(), m.TargetString()))
		}
		switch {
		case q != "" && s.Local:
			fixes = append(fixes, fmt.Sprintf("`berth load queue %s --depth N` puts work on it locally", q))
		case q != "":
			fixes = append(fixes, fmt.Sprintf("publish messages to queue %s", q))
		}
	}
	msg = fmt.Sprintf("HPA %s/%s holds %s at zero (minReplicas 0)", h.Namespace, h.Name, hpastatus.Target(h))
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	if r := s.lastRescale(h); r != "" {
		msg += "; last rescale " + r
	}
	fix = "nothing to do while there is no work: the HPA wakes it when its metric rises above 0"
	if len(fixes) > 0 {
		fix += "; " + strings.Join(fixes, "; ")
	}
	return msg, fix
}

// raiseMax is the fix for an HPA at its maximum, bounded by the class
// the workload belongs to.
func (s *Snapshot) raiseMax(h *autoscalingv2.HorizontalPodAutoscaler, w *Workload) string {
	fix := fmt.Sprintf("raise HPA %s's spec.maxReplicas from %d", h.Name, h.Spec.MaxReplicas)
	if cl := classNamed(s, w.Class); cl != nil && cl.Scaling != nil && cl.Scaling.MaxReplicas > 0 {
		if cl.Scaling.MaxReplicas > h.Spec.MaxReplicas {
			fix += fmt.Sprintf(" (class %s allows %d)", cl.Name, cl.Scaling.MaxReplicas)
		} else {
			fix = fmt.Sprintf("raise class %s's scaling.maxReplicas (now %d) in the blueprint and `berth apply`, then HPA %s's spec.maxReplicas", cl.Name, cl.Scaling.MaxReplicas, h.Name)
		}
	}
	return fix + ", or add capacity per replica (more resources, then a higher target)"
}

// lastRescale is "40s ago: New size: 4; reason: ...", the HPA's newest
// SuccessfulRescale among the snapshot's events, or "".
func (s *Snapshot) lastRescale(h *autoscalingv2.HorizontalPodAutoscaler) string {
	evs := s.eventsAbout("HorizontalPodAutoscaler", h.Namespace, h.Name, h.UID)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Reason == hpastatus.ReasonSuccessfulRescale {
			return s.eventLine(evs[i]).Age + " ago: " + hpastatus.Tidy(evs[i].Message)
		}
	}
	return ""
}

// stuckHPAs are the workloads whose HPAs cannot scale them, cannot read
// their metric, or hold them at their maximum while the metric asks for
// more: what `berth why --all` lists besides Pending pods.
func (s *Snapshot) stuckHPAs(namespace string) []Verdict {
	var out []Verdict
	for i := range s.HPAs {
		h := &s.HPAs[i]
		if namespace != "" && h.Namespace != namespace {
			continue
		}
		w := &Workload{Kind: h.Spec.ScaleTargetRef.Kind, Namespace: h.Namespace, Name: h.Spec.ScaleTargetRef.Name, Desired: -1}
		c, ok := s.hpaCause(w)
		limited := hpastatus.Condition(h, autoscalingv2.ScalingLimited)
		atMaxWantingMore := c.Code == CauseHPAAtMax && limited != nil && limited.Status == corev1.ConditionTrue && limited.Reason == reasonTooManyReplicas
		if ok && (atMaxWantingMore || c.Code == CauseHPAMetric || c.Code == CauseHPACannotScale || c.Code == CauseHPASelector) {
			out = append(out, Verdict{Workload: w.String(), Top: c, Causes: []Cause{}})
		}
	}
	return out
}
