package status

import (
	"context"
	"strings"
	"testing"
	"time"

	"berth.io/berth/internal/listing"
	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

var hpaNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// hpas are an inference Deployment on requests per second at its
// maximum, a batch Deployment on a queue's depth, one on CPU, and one
// that cannot read its metric.
func hpas() []runtime.Object {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	embed := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "search", Name: "embed"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "embed", APIVersion: "apps/v1"},
			MinReplicas:    ptr(int32(1)), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("20")},
			}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 4, DesiredReplicas: 4,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
				Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"}, Current: autoscalingv2.MetricValueStatus{AverageValue: q("35")},
			}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingLimited, Status: "True", Reason: "TooManyReplicas"}},
		},
	}
	orders := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: "orders-worker"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "worker", APIVersion: "apps/v1"},
			MinReplicas:    ptr(int32(0)), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "rabbitmq_queue_messages_ready", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "orders"}}},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("5")},
			}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 4,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
				Metric:  autoscalingv2.MetricIdentifier{Name: "rabbitmq_queue_messages_ready", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "orders"}}},
				Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(6667, resource.DecimalSI)},
			}}},
		},
	}
	api := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "search", Name: "api"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "api", APIVersion: "apps/v1"},
			MaxReplicas:    6,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(60))},
			}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 2, DesiredReplicas: 2,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(35)), AverageValue: q("175m")},
			}}},
		},
	}
	gpu := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "search", Name: "rerank"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "StatefulSet", Name: "rerank", APIVersion: "apps/v1"},
			MaxReplicas:    2,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "DCGM_FI_DEV_GPU_UTIL"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("70")},
			}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 1, DesiredReplicas: 1,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingActive, Status: "False", Reason: "FailedGetPodsMetric"}},
		},
	}
	rescaled := func(ns, hpa string, ago time.Duration, msg string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: hpa + "." + ago.String()},
			InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Namespace: ns, Name: hpa},
			Reason:         "SuccessfulRescale", Type: "Normal", Message: msg,
			LastTimestamp: metav1.NewTime(hpaNow.Add(-ago)),
		}
	}
	return []runtime.Object{embed, orders, api, gpu,
		rescaled("search", "embed", 5*time.Minute, "New size: 2; reason: pods metric requests_per_second above target"),
		rescaled("search", "embed", 40*time.Second, "New size: 4; reason: pods metric requests_per_second above target"),
		rescaled("batch", "orders-worker", 12*time.Second, "New size: 3; reason: external metric rabbitmq_queue_messages_ready(&LabelSelector{MatchLabels:map[string]string{queue: orders,},MatchExpressions:[]LabelSelectorRequirement{},}) above target"),
	}
}

// The scaled workloads' table: one row per HPA, sorted by namespace and
// name, each metric against its target and the newest rescale, the
// controller's selector made readable.
func TestScaledWorkloads(t *testing.T) {
	c := fake.NewClientset(hpas()...)
	list, err := collectScaled(context.Background(), c, listing.FromAPI(c))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := renderScaled(&b, list, hpaNow); err != nil {
		t.Fatal(err)
	}
	want := `
SCALED WORKLOADS (HorizontalPodAutoscalers)
NAMESPACE  TARGET                                 REPLICAS now/desired       MIN-MAX  METRICS current/target                                  LAST SCALE
batch      deployment/worker (hpa orders-worker)  3/4                        0-10     rabbitmq_queue_messages_ready{queue=orders} 6.67/5 avg  12s ago: New size: 3; reason: external metric rabbitmq_queue_messages_ready{queue=orders} above target
search     deployment/api                         2/2                        1-6      cpu 35%/60%                                             -
search     deployment/embed                       4/4 (at max)               1-4      requests_per_second 35/20 per pod                       40s ago: New size: 4; reason: pods metric requests_per_second above target
search     statefulset/rerank                     1/1 (FailedGetPodsMetric)  1-2      DCGM_FI_DEV_GPU_UTIL ?/70 per pod                       -
`
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
}

// No HPAs, no table.
func TestNoScaledWorkloads(t *testing.T) {
	empty := fake.NewClientset()
	list, err := collectScaled(context.Background(), empty, listing.FromAPI(empty))
	if err != nil || list != nil {
		t.Fatalf("collectScaled = %v, %v; want nil, nil", list, err)
	}
	var b strings.Builder
	if err := renderScaled(&b, list, hpaNow); err != nil || b.Len() != 0 {
		t.Errorf("renderScaled printed %q, %v; want nothing", b.String(), err)
	}
}
