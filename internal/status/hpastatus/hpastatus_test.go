package hpastatus

import (
	"math"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The controller prints selectors with %+v; Tidy makes them readable.
func TestTidy(t *testing.T) {
	for in, want := range map[string]string{
		"New size: 3; reason: external metric rabbitmq_queue_messages_ready(&LabelSelector{MatchLabels:map[string]string{queue: orders,},MatchExpressions:[]LabelSelectorRequirement{},}) above target": "New size: 3; reason: external metric rabbitmq_queue_messages_ready{queue=orders} above target",
		"unable to get external metric ns/m/&LabelSelector{MatchLabels:map[string]string{a: b,queue: q,},MatchExpressions:[]LabelSelectorRequirement{},}: boom":                                         "unable to get external metric ns/m/{a=b,queue=q}: boom",
		"New size: 2; reason: pods metric requests_per_second above target": "New size: 2; reason: pods metric requests_per_second above target",
	} {
		if got := Tidy(in); got != want {
			t.Errorf("Tidy(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// Wants is the controller's ceil(current/target × replicas).
func TestWants(t *testing.T) {
	m := Metric{Current: 35, Target: 20, Known: true}
	if got := m.Wants(4); got != 7 {
		t.Errorf("35/20 at 4 replicas wants %d, want 7", got)
	}
	if got := (Metric{Target: 20}).Wants(4); got != -1 {
		t.Errorf("an unknown value wants %d, want -1", got)
	}
}

// At zero replicas the controller publishes an external average of the
// smallest quantity (a division by zero): shown as "-", not as a value.
func TestAverageOverZeroReplicas(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ExternalMetricSourceType,
			External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "rabbitmq_queue_messages_ready"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(5, resource.DecimalSI)},
			},
		}}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentMetrics: []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ExternalMetricSourceType,
			External: &autoscalingv2.ExternalMetricStatus{
				Metric:  autoscalingv2.MetricIdentifier{Name: "rabbitmq_queue_messages_ready"},
				Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(math.MinInt64, resource.DecimalSI)},
			},
		}}},
	}
	m := Metrics(hpa)[0]
	if got, want := m.String(), "rabbitmq_queue_messages_ready -/5 avg"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if m.Known || m.Wants(0) != -1 {
		t.Errorf("Known = %v, Wants = %d; want an unknown value", m.Known, m.Wants(0))
	}
}
