// Package hpastatus reads what the HorizontalPodAutoscaler controller
// publishes about an HPA: each metric's current value against its
// target (from .status.currentMetrics), its conditions, and its
// SuccessfulRescale events. `berth status` and `berth why` read HPAs
// through it, as they read the node autoscaler through castatus.
package hpastatus

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// The HPA controller's event reasons (k8s.io/kubernetes
// pkg/controller/podautoscaler/horizontal.go).
const (
	ReasonSuccessfulRescale = "SuccessfulRescale"
	ReasonFailedRescale     = "FailedRescale"
)

// EventSelector picks the events about HPAs: list them once with it.
var EventSelector = fields.OneTermEqualSelector("involvedObject.kind", "HorizontalPodAutoscaler").String()

// Metric is one of an HPA's metrics as people read it.
type Metric struct {
	// Type is the metric's source: Pods, External, Resource,
	// ContainerResource or Object.
	Type autoscalingv2.MetricSourceType
	// Name is the metric with its selector, "rabbitmq_queue_messages_ready{queue=orders}",
	// or for a resource its name, "cpu".
	Name string
	// Selector is the metric's label selector; nil when it has none.
	Selector map[string]string
	// Current and Target are the values compared, in the target's terms
	// (percent for a utilization); Known is false when the controller
	// has published no current value yet.
	Current, Target float64
	Known           bool
	// current and target are the values as written, with their unit.
	current, target string
	// per is how the target counts: " per pod", " avg" (an external
	// metric's average over the replicas), "%", or "" (a total).
	per string
	// Average is true when the target is per replica (AverageValue or
	// Utilization); false for a Value target, a total.
	Average bool
}

// String is "requests_per_second 42/20 per pod", "cpu 35%/60%",
// "rabbitmq_queue_messages_ready{queue=orders} 20/5 avg"; an unknown
// current value is "?", an average over zero replicas "-".
func (m Metric) String() string {
	cur := m.current
	if !m.Known && cur != "-" {
		cur = "?"
	}
	if m.per == "%" {
		return fmt.Sprintf("%s %s%%/%s%%", m.Name, cur, m.target)
	}
	return fmt.Sprintf("%s %s/%s%s", m.Name, cur, m.target, m.per)
}

// Value is the current value as written ("42", "35%"), or "?".
func (m Metric) Value() string {
	switch {
	case !m.Known:
		return "?"
	case m.per == "%":
		return m.current + "%"
	}
	return m.current
}

// TargetString is the target as written, with how it counts:
// "20 per pod", "60%", "5 avg".
func (m Metric) TargetString() string {
	if m.per == "%" {
		return m.target + "%"
	}
	return m.target + m.per
}

// Wants is how many replicas the metric asks for at current replicas,
// as the controller computes it (ceil(current/target × replicas), or
// for an external average ceil(total/target)), tolerance aside; -1 when
// the current value is unknown.
func (m Metric) Wants(current int32) int32 {
	if !m.Known || m.Target <= 0 || m.Current < 0 {
		return -1
	}
	return int32(math.Ceil(m.Current / m.Target * float64(current)))
}

// Metrics are the HPA's metrics in spec order, each with the current
// value the controller last published for it.
func Metrics(hpa *autoscalingv2.HorizontalPodAutoscaler) []Metric {
	out := make([]Metric, 0, len(hpa.Spec.Metrics))
	for _, spec := range hpa.Spec.Metrics {
		m := Metric{Type: spec.Type}
		var target autoscalingv2.MetricTarget
		var current *autoscalingv2.MetricValueStatus
		switch spec.Type {
		case autoscalingv2.PodsMetricSourceType:
			if spec.Pods == nil {
				continue
			}
			target = spec.Pods.Target
			current = m.identify(spec.Pods.Metric, hpa.Status.CurrentMetrics, func(st autoscalingv2.MetricStatus) (*autoscalingv2.MetricIdentifier, *autoscalingv2.MetricValueStatus) {
				if st.Pods == nil {
					return nil, nil
				}
				return &st.Pods.Metric, &st.Pods.Current
			})
		case autoscalingv2.ExternalMetricSourceType:
			if spec.External == nil {
				continue
			}
			target = spec.External.Target
			current = m.identify(spec.External.Metric, hpa.Status.CurrentMetrics, func(st autoscalingv2.MetricStatus) (*autoscalingv2.MetricIdentifier, *autoscalingv2.MetricValueStatus) {
				if st.External == nil {
					return nil, nil
				}
				return &st.External.Metric, &st.External.Current
			})
		case autoscalingv2.ObjectMetricSourceType:
			if spec.Object == nil {
				continue
			}
			o := spec.Object.DescribedObject
			m.Name, target = fmt.Sprintf("%s{%s/%s}", spec.Object.Metric.Name, strings.ToLower(o.Kind), o.Name), spec.Object.Target
			for _, st := range hpa.Status.CurrentMetrics {
				if st.Object != nil && st.Object.DescribedObject == o && sameMetric(st.Object.Metric, spec.Object.Metric) {
					current = &st.Object.Current
				}
			}
		case autoscalingv2.ResourceMetricSourceType:
			if spec.Resource == nil {
				continue
			}
			m.Name, target = string(spec.Resource.Name), spec.Resource.Target
			for _, st := range hpa.Status.CurrentMetrics {
				if st.Resource != nil && st.Resource.Name == spec.Resource.Name {
					current = &st.Resource.Current
				}
			}
		case autoscalingv2.ContainerResourceMetricSourceType:
			if spec.ContainerResource == nil {
				continue
			}
			c := spec.ContainerResource
			m.Name, target = fmt.Sprintf("%s(%s)", c.Name, c.Container), c.Target
			for _, st := range hpa.Status.CurrentMetrics {
				if st.ContainerResource != nil && st.ContainerResource.Name == c.Name && st.ContainerResource.Container == c.Container {
					current = &st.ContainerResource.Current
				}
			}
		default:
			continue
		}
		m.fill(spec.Type, target, current)
		out = append(out, m)
	}
	return out
}

// identify names a Pods or External metric by its identifier and returns
// its current value among statuses, which of reads (nil when a status is
// of another type).
func (m *Metric) identify(id autoscalingv2.MetricIdentifier, statuses []autoscalingv2.MetricStatus,
	of func(autoscalingv2.MetricStatus) (*autoscalingv2.MetricIdentifier, *autoscalingv2.MetricValueStatus)) *autoscalingv2.MetricValueStatus {
	m.Selector = matchLabels(id.Selector)
	m.Name = id.Name + selectorString(id.Selector)
	var current *autoscalingv2.MetricValueStatus
	for _, st := range statuses {
		if sid, value := of(st); sid != nil && sameMetric(*sid, id) {
			current = value
		}
	}
	return current
}

// fill sets the metric's values from its target and current status,
// compared in the target's terms.
func (m *Metric) fill(t autoscalingv2.MetricSourceType, target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) {
	switch {
	case target.AverageUtilization != nil:
		m.per, m.Average = "%", true
		m.Target, m.target = float64(*target.AverageUtilization), strconv.Itoa(int(*target.AverageUtilization))
		if current != nil && current.AverageUtilization != nil {
			m.Current, m.current, m.Known = float64(*current.AverageUtilization), strconv.Itoa(int(*current.AverageUtilization)), true
		}
	case target.AverageValue != nil:
		m.per, m.Average = " per pod", true
		if t == autoscalingv2.ExternalMetricSourceType || t == autoscalingv2.ObjectMetricSourceType {
			m.per = " avg"
		}
		m.Target, m.target = number(target.AverageValue)
		if current != nil && current.AverageValue != nil {
			m.Current, m.current = number(current.AverageValue)
			m.Known = true
			if m.Current < 0 {
				// At zero replicas the 1.36 controller divides the
				// external total by zero and publishes the smallest
				// quantity there is: no average, not a value.
				m.Current, m.current, m.Known = 0, "-", false
			}
		}
	case target.Value != nil:
		m.Target, m.target = number(target.Value)
		if current != nil && current.Value != nil {
			m.Current, m.current = number(current.Value)
			m.Known = true
		}
	}
}

// number is a quantity as a float and as people write it: "42", "2.5",
// "512Mi" for a binary quantity.
func number(q *resource.Quantity) (float64, string) {
	f := q.AsApproximateFloat64()
	if q.Format == resource.BinarySI {
		return f, q.String()
	}
	return f, strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

func sameMetric(a, b autoscalingv2.MetricIdentifier) bool {
	return a.Name == b.Name && selectorString(a.Selector) == selectorString(b.Selector)
}

func matchLabels(s *metav1.LabelSelector) map[string]string {
	if s == nil {
		return nil
	}
	return s.MatchLabels
}

// selectorString is "{queue=orders}", or "" for no selector.
func selectorString(s *metav1.LabelSelector) string {
	if s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return "{" + s.String() + "}"
	}
	return "{" + sel.String() + "}"
}

// Condition is the HPA's condition of type t, or nil.
func Condition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range hpa.Status.Conditions {
		if hpa.Status.Conditions[i].Type == t {
			return &hpa.Status.Conditions[i]
		}
	}
	return nil
}

// MinReplicas is spec.minReplicas, 1 when unset as the API defaults it.
func MinReplicas(hpa *autoscalingv2.HorizontalPodAutoscaler) int32 {
	if hpa.Spec.MinReplicas == nil {
		return 1
	}
	return *hpa.Spec.MinReplicas
}

// Target is the scale target as kubectl names it: "deployment/embed".
func Target(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	return strings.ToLower(hpa.Spec.ScaleTargetRef.Kind) + "/" + hpa.Spec.ScaleTargetRef.Name
}

// Rescale is one SuccessfulRescale event: when, and the controller's
// message with its selectors made readable.
type Rescale struct {
	Time    time.Time
	Message string
}

// LastRescales is the newest SuccessfulRescale event of each HPA, by
// NAMESPACE/NAME, from events listed with EventSelector.
func LastRescales(events []corev1.Event) map[string]Rescale {
	out := map[string]Rescale{}
	for i := range events {
		ev := &events[i]
		if ev.InvolvedObject.Kind != "HorizontalPodAutoscaler" || ev.Reason != ReasonSuccessfulRescale {
			continue
		}
		key := ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
		t := EventTime(ev)
		if last, ok := out[key]; !ok || !t.Before(last.Time) {
			out[key] = Rescale{Time: t, Message: Tidy(ev.Message)}
		}
	}
	return out
}

// EventTime is when the event last happened, whichever clock its
// writer set.
func EventTime(ev *corev1.Event) time.Time {
	for _, t := range []time.Time{ev.LastTimestamp.Time, ev.EventTime.Time, ev.FirstTimestamp.Time, ev.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// goSelector is a *metav1.LabelSelector as the controller prints it
// with %+v, without match expressions.
var goSelector = regexp.MustCompile(`\(?&LabelSelector\{MatchLabels:map\[string\]string\{([^}]*)\},MatchExpressions:\[\]LabelSelectorRequirement\{\},\}\)?`)

// Tidy rewrites the selectors in the controller's messages, "external
// metric q(&LabelSelector{MatchLabels:map[string]string{queue: orders,},...})",
// as "external metric q{queue=orders}".
func Tidy(msg string) string {
	return goSelector.ReplaceAllStringFunc(msg, func(s string) string {
		inner := goSelector.FindStringSubmatch(s)[1]
		var pairs []string
		for _, kv := range strings.Split(inner, ",") {
			if k, v, ok := strings.Cut(kv, ": "); ok {
				pairs = append(pairs, k+"="+v)
			}
		}
		sort.Strings(pairs)
		if len(pairs) == 0 {
			return ""
		}
		return "{" + strings.Join(pairs, ",") + "}"
	})
}

// Queue is the queue an external metric's selector names (queue=NAME),
// or "".
func (m Metric) Queue() string {
	if m.Type != autoscalingv2.ExternalMetricSourceType {
		return ""
	}
	for _, k := range []string{"queue", "queue_name", "topic"} {
		if v := m.Selector[k]; v != "" {
			return v
		}
	}
	return ""
}

// Scaled reports whether an HPA scales the object: its scaleTargetRef
// names kind and name (group aside).
func Scaled(hpa *autoscalingv2.HorizontalPodAutoscaler, kind, name string) bool {
	return hpa.Spec.ScaleTargetRef.Kind == kind && hpa.Spec.ScaleTargetRef.Name == name
}

// Sort orders HPAs by namespace and name.
func Sort(hpas []autoscalingv2.HorizontalPodAutoscaler) {
	slices.SortFunc(hpas, func(a, b autoscalingv2.HorizontalPodAutoscaler) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
}
