package why

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/problem"
)

// hpaBuilder builds an HPA of namespace ns fluently, named for the
// Deployment it scales.
type hpaBuilder struct {
	h autoscalingv2.HorizontalPodAutoscaler
}

func makeHPA(ns, deployment string, min, max int32) *hpaBuilder {
	return &hpaBuilder{h: autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: deployment, UID: types.UID("HorizontalPodAutoscaler/" + deployment)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment},
			MinReplicas:    &min, MaxReplicas: max,
		},
	}}
}

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// pods adds a Pods metric with an average target, and its current
// value when current is not "".
func (b *hpaBuilder) pods(name, target, current string) *hpaBuilder {
	id := autoscalingv2.MetricIdentifier{Name: name}
	b.h.Spec.Metrics = append(b.h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: id, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qty(target)}}})
	if current != "" {
		b.h.Status.CurrentMetrics = append(b.h.Status.CurrentMetrics, autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
			Metric: id, Current: autoscalingv2.MetricValueStatus{AverageValue: qty(current)}}})
	}
	return b
}

// queue adds a queue's depth as an external metric with an average
// target, and its current value when current is not "".
func (b *hpaBuilder) queue(queue, target, current string) *hpaBuilder {
	id := autoscalingv2.MetricIdentifier{Name: "rabbitmq_queue_messages_ready", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": queue}}}
	b.h.Spec.Metrics = append(b.h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: id, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qty(target)}}})
	if current != "" {
		b.h.Status.CurrentMetrics = append(b.h.Status.CurrentMetrics, autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
			Metric: id, Current: autoscalingv2.MetricValueStatus{AverageValue: qty(current)}}})
	}
	return b
}

func (b *hpaBuilder) replicas(current, desired int32) *hpaBuilder {
	b.h.Status.CurrentReplicas, b.h.Status.DesiredReplicas = current, desired
	return b
}

// condition sets a condition with the controller's own reason and
// message.
func (b *hpaBuilder) condition(t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, msg string) *hpaBuilder {
	b.h.Status.Conditions = append(b.h.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: status, Reason: reason, Message: msg})
	return b
}

func (b *hpaBuilder) obj() autoscalingv2.HorizontalPodAutoscaler { return b.h }

// scaledDeployment is a Deployment of class inference with its pods'
// ReplicaSet, and a snapshot with the test blueprint, whose inference
// class scales on requests per second up to 8 replicas.
func scaledDeployment(t *testing.T, name string, desired int32, pods ...corev1.Pod) (*Snapshot, *Workload) {
	s := snapshotOf(cluster(), pods...)
	s.Blueprint = testBlueprint(t, "")
	s.Blueprint.Spec.Classes[0].Scaling = &v1alpha1.Scaling{Metric: v1alpha1.MetricRPS, Target: 20, MaxReplicas: 8}
	w := &Workload{Kind: "Deployment", Namespace: "search", Name: name, Desired: desired, Class: "inference",
		Creators: []Ref{{Kind: "ReplicaSet", Name: name + "-5d8f", UID: types.UID("ReplicaSet/" + name + "-5d8f")}}}
	return s, w
}

func running(n int, name string) []corev1.Pod {
	var out []corev1.Pod
	for i := range n {
		out = append(out, *objtest.MakePod("search", name+"-"+string(rune('a'+i))).Owner("ReplicaSet", name+"-5d8f").On("cpu-0").Obj())
	}
	return out
}

func rescaleEvent(ns, hpa, msg string, ago time.Duration) corev1.Event {
	e := event("HorizontalPodAutoscaler", ns, hpa, "SuccessfulRescale", msg)
	e.Type, e.Count, e.LastTimestamp = corev1.EventTypeNormal, 1, metav1.NewTime(now.Add(-ago))
	return e
}

// At its maximum with every pod running, the HPA is the verdict: the
// metric, what it asks for, the rule, and the class's limit in the fix.
func TestHPAAtMax(t *testing.T) {
	s, w := scaledDeployment(t, "embed", 4, running(4, "embed")...)
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "embed", 1, 4).pods("requests_per_second", "20", "35").replicas(4, 4).
		condition(autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooManyReplicas", "the desired replica count is more than the maximum replica count").obj()}
	s.Events = []corev1.Event{rescaleEvent("search", "embed", "New size: 4; reason: pods metric requests_per_second above target", 40*time.Second)}
	v := ExplainWorkload(s, w)
	want := Cause{Layer: LayerHPA, Code: CauseHPAAtMax, Problem: problem.Problem{
		Message: "HPA search/embed holds deployment/embed at its maximum of 4: requests_per_second 35/20 per pod asks for 7 (ScalingLimited=True TooManyReplicas: the desired replica count is more than the maximum replica count); last rescale 40s ago: New size: 4; reason: pods metric requests_per_second above target",
		Fix:     "raise HPA embed's spec.maxReplicas from 4 (class inference allows 8), or add capacity per replica (more resources, then a higher target)"}}
	if d := cmp.Diff(want, v.Top); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}
	if c := cause(v, CauseWorkload); c == nil || c.Message != "deployment/search/embed has 4 pod(s), 4 Running, none Pending" {
		t.Errorf("workload cause = %+v", c)
	}
	var b bytes.Buffer
	if err := Render(&b, &v); err != nil {
		t.Fatal(err)
	}
	golden(t, "hpa-at-max.txt", b.Bytes())

	// At the class's own limit, the blueprint is what to raise.
	s.Blueprint.Spec.Classes[0].Scaling.MaxReplicas = 4
	wantTop(t, ExplainWorkload(s, w), CauseHPAAtMax, nil,
		[]string{"raise class inference's scaling.maxReplicas (now 4) in the blueprint and `berth apply`, then HPA embed's spec.maxReplicas"})
}

// A Pending pod stays the verdict; the HPA at its maximum adds to it.
func TestHPAAtMaxWithPendingPod(t *testing.T) {
	pods := append(running(3, "embed"), *objtest.MakePod("search", "embed-d").Owner("ReplicaSet", "embed-5d8f").NodeSelector("agentpool", "nope").Obj())
	s, w := scaledDeployment(t, "embed", 4, pods...)
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "embed", 1, 4).pods("requests_per_second", "20", "35").replicas(4, 4).
		condition(autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooManyReplicas", "the desired replica count is more than the maximum replica count").obj()}
	v := ExplainWorkload(s, w)
	wantTop(t, v, CauseNodeAffinity, nil, nil)
	if c := cause(v, CauseHPAAtMax); c == nil || c.Layer != LayerHPA {
		t.Errorf("no HPA cause among %+v", v.Causes)
	}
}

// At zero on an empty queue: nothing to do, and how to put work on it
// locally.
func TestHPAAtZeroOnEmptyQueue(t *testing.T) {
	s, w := scaledDeployment(t, "worker", 0)
	s.Local = true
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "worker", 0, 10).queue("orders", "5", "0").replicas(0, 0).
		condition(autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero").
		condition(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from external metric rabbitmq_queue_messages_ready(&LabelSelector{MatchLabels:map[string]string{queue: orders,},MatchExpressions:[]LabelSelectorRequirement{},})").obj()}
	s.Events = []corev1.Event{rescaleEvent("search", "worker", "New size: 0; reason: All metrics below target", 3*time.Minute)}
	want := Cause{Layer: LayerHPA, Code: CauseHPAAtZero, Problem: problem.Problem{
		Message: "HPA search/worker holds deployment/worker at zero (minReplicas 0): external metric rabbitmq_queue_messages_ready{queue=orders} is 0 — the queue is empty; last rescale 3m ago: New size: 0; reason: All metrics below target",
		Fix:     "nothing to do while there is no work: the HPA wakes it when its metric rises above 0; `berth load queue orders --depth N` puts work on it locally"}}
	if d := cmp.Diff(want, ExplainWorkload(s, w).Top); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}
	s.Local = false
	wantTop(t, ExplainWorkload(s, w), CauseHPAAtZero, nil, []string{"publish messages to queue orders"})
}

// Just after the HPA took its worker to zero, its status still says the
// replicas it saw before (currentReplicas 2, desired 0): the workload at
// zero decides, not that count, and it is not "at its maximum of 2".
func TestHPAJustScaledToZero(t *testing.T) {
	s, w := scaledDeployment(t, "worker", 0)
	s.Local = true
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "worker", 0, 2).queue("orders", "10", "0").replicas(2, 0).
		condition(autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange", "the desired count is within the acceptable range").obj()}
	wantTop(t, ExplainWorkload(s, w), CauseHPAAtZero, nil, []string{"berth load queue orders"})
}

// The metrics API does not answer: the condition's reason and message,
// the metric, and where to look.
func TestHPACannotReadExternalMetric(t *testing.T) {
	s, w := scaledDeployment(t, "worker", 1, running(1, "worker")...)
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "worker", 0, 10).queue("orders", "5", "").replicas(1, 1).
		condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale").
		condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetExternalMetric",
			"the HPA was unable to compute the replica count: unable to get external metric search/rabbitmq_queue_messages_ready/&LabelSelector{MatchLabels:map[string]string{queue: orders,},MatchExpressions:[]LabelSelectorRequirement{},}: unable to fetch metrics from external metrics API: the server could not find the requested resource (get rabbitmq_queue_messages_ready.external.metrics.k8s.io)").obj()}
	want := Cause{Layer: LayerHPA, Code: CauseHPAMetric, Problem: problem.Problem{
		Message: "HPA search/worker cannot read its metric rabbitmq_queue_messages_ready{queue=orders} (target 5 avg), so it holds deployment/worker at 1 replica (ScalingActive=False FailedGetExternalMetric: the HPA was unable to compute the replica count: unable to get external metric search/rabbitmq_queue_messages_ready/{queue=orders}: unable to fetch metrics from external metrics API: the server could not find the requested resource (get rabbitmq_queue_messages_ready.external.metrics.k8s.io))",
		Fix:     "is the metrics API registered and Available? `kubectl get apiservice v1beta1.external.metrics.k8s.io`; does it serve rabbitmq_queue_messages_ready{queue=orders}? `kubectl get --raw /apis/external.metrics.k8s.io/v1beta1/namespaces/search/rabbitmq_queue_messages_ready`"}}
	if d := cmp.Diff(want, ExplainWorkload(s, w).Top); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}
}

// Pods that report no metric yet: the HPA waits on them being Ready.
func TestHPACannotReadPodsMetric(t *testing.T) {
	s, w := scaledDeployment(t, "embed", 2, running(2, "embed")...)
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "embed", 1, 4).pods("DCGM_FI_DEV_GPU_UTIL", "70", "").replicas(2, 2).
		condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetPodsMetric",
			"the HPA was unable to compute the replica count: did not receive metrics for targeted pods (pods might be unready)").obj()}
	wantTop(t, ExplainWorkload(s, w), CauseHPAMetric,
		[]string{"HPA search/embed cannot read its metric DCGM_FI_DEV_GPU_UTIL (target 70 per pod), so it holds deployment/embed at 2 replicas (ScalingActive=False FailedGetPodsMetric:"},
		[]string{"report no metrics until they are Ready", "`kubectl get apiservice v1beta2.custom.metrics.k8s.io`", "'/apis/custom.metrics.k8s.io/v1beta2/namespaces/search/pods/*/DCGM_FI_DEV_GPU_UTIL'"})
}

// Put at zero by hand, a workload on a per-pod metric cannot wake.
func TestHPAScalingDisabled(t *testing.T) {
	s, w := scaledDeployment(t, "embed", 0)
	h := makeHPA("search", "embed", 1, 4).pods("requests_per_second", "20", "").replicas(0, 0).
		condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{h.obj()}
	want := Cause{Layer: LayerHPA, Code: CauseHPADisabled, Problem: problem.Problem{
		Message: "HPA search/embed does not scale deployment/embed: its replicas are 0 and it did not put them there (ScalingActive=False ScalingDisabled: scaling is disabled since the replica count of the target is zero)",
		Fix:     "`kubectl scale deployment/embed -n search --replicas=1` hands it back to the HPA"}}
	if d := cmp.Diff(want, ExplainWorkload(s, w).Top); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}
	zero := int32(0)
	s.HPAs[0].Spec.MinReplicas = &zero
	wantTop(t, ExplainWorkload(s, w), CauseHPADisabled, nil, []string{"an HPA wakes a workload from zero only on an External or Object metric"})
}

// The target cannot be read, and the target's selector is wrong.
func TestHPACannotScale(t *testing.T) {
	s, w := scaledDeployment(t, "embed", 1, running(1, "embed")...)
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "embed", 1, 4).pods("requests_per_second", "20", "").
		condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", `the HPA controller was unable to get the target's current scale: deployments.apps "embed" not found`).obj()}
	wantTop(t, ExplainWorkload(s, w), CauseHPACannotScale,
		[]string{`HPA search/embed cannot scale deployment/embed (AbleToScale=False FailedGetScale: the HPA controller was unable to get the target's current scale: deployments.apps "embed" not found)`},
		[]string{"check spec.scaleTargetRef names deployment/embed in namespace search"})

	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "embed", 1, 4).pods("requests_per_second", "20", "").
		condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector").obj()}
	wantTop(t, ExplainWorkload(s, w), CauseHPASelector, []string{"HPA search/embed cannot tell which pods are deployment/embed's (ScalingActive=False InvalidSelector: the HPA target's scale is missing a selector)"}, nil)
}

// Scaling freely within its range, the HPA says nothing.
func TestHPAWithinRange(t *testing.T) {
	s, w := scaledDeployment(t, "embed", 2, running(2, "embed")...)
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{makeHPA("search", "embed", 1, 4).pods("requests_per_second", "20", "18").replicas(2, 2).
		condition(autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange", "the desired count is within the acceptable range").obj()}
	wantTop(t, ExplainWorkload(s, w), CauseNotPending, nil, nil)
}

// --all lists HPAs at their maximum that want more, and those that
// cannot read their metric; not a batch workload at zero.
func TestExplainAllStuckHPAs(t *testing.T) {
	s := snapshotOf(cluster())
	s.HPAs = []autoscalingv2.HorizontalPodAutoscaler{
		makeHPA("search", "embed", 1, 4).pods("requests_per_second", "20", "35").replicas(4, 4).
			condition(autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooManyReplicas", "the desired replica count is more than the maximum replica count").obj(),
		makeHPA("search", "full", 1, 4).pods("requests_per_second", "20", "20").replicas(4, 4).
			condition(autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange", "the desired count is within the acceptable range").obj(),
		makeHPA("batch", "worker", 0, 10).queue("orders", "5", "").replicas(1, 1).
			condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetExternalMetric", "the HPA was unable to compute the replica count: unable to get external metric").obj(),
		makeHPA("batch", "idle", 0, 10).queue("idle", "5", "0").replicas(0, 0).obj(),
	}
	var got []string
	for _, v := range ExplainAll(s, "").Workloads {
		got = append(got, v.Workload+" "+v.Top.Code)
	}
	want := []string{"deployment/search/embed hpa-at-max", "deployment/batch/worker hpa-metric-unavailable"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("workloads (-want +got):\n%s", d)
	}
	if got := ExplainAll(s, "batch").Workloads; len(got) != 1 {
		t.Errorf("-n batch lists %d workloads, want 1", len(got))
	}
}
