package metricsapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/objtest"
)

var testNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// testCluster is the cluster most tests read: in namespace shop, the
// Deployment web (three Ready pods, one Pending, one Running but not
// Ready), the Deployment infer (two Ready pods holding a GPU each) and the
// StatefulSet db (one pod); in namespace other, a pod labelled app=web
// that no loaded workload owns.
func testCluster() []runtime.Object {
	web := map[string]string{"app": "web"}
	webReq, webLim := resources("cpu", "500m", "memory", "256Mi"), resources("cpu", "800m")
	infer := map[string]string{"app": "infer"}
	inferReq, inferLim := resources("cpu", "1", "memory", "1Gi"), resources("nvidia.com/gpu", "1")
	return []runtime.Object{
		deployment("shop", "web", web),
		deployment("shop", "infer", infer),
		statefulSet("shop", "db", map[string]string{"app": "db"}),
		objtest.MakePod("shop", "web-a").Labels(web).NodeName("n1").Ready().Resources(webReq, webLim).Obj(),
		objtest.MakePod("shop", "web-b").Labels(web).NodeName("n1").Ready().Resources(webReq, webLim).Obj(),
		objtest.MakePod("shop", "web-c").Labels(web).NodeName("n2").Ready().Resources(webReq, webLim).Obj(),
		objtest.MakePod("shop", "web-pending").Labels(web).NodeName("n1").Resources(webReq, webLim).Obj(),
		objtest.MakePod("shop", "web-unready").Labels(web).NodeName("n2").NotReady().Resources(webReq, webLim).Obj(),
		objtest.MakePod("shop", "infer-a").Labels(infer).NodeName("gpu-1").Ready().Resources(inferReq, inferLim).Obj(),
		objtest.MakePod("shop", "infer-b").Labels(infer).NodeName("gpu-1").Ready().Resources(inferReq, inferLim).Obj(),
		objtest.MakePod("shop", "db-0").Labels(map[string]string{"app": "db"}).NodeName("n3").Ready().Resources(resources("cpu", "100m", "memory", "64Mi"), nil).Obj(),
		objtest.MakePod("other", "web-x").Labels(web).NodeName("n3").Ready().Resources(resources("cpu", "200m", "memory", "128Mi"), nil).Obj(),
		node("n1"), node("n2"), node("n3"), node("gpu-1"), node("idle"),
	}
}

// testLoad is the load on testCluster: per Ready pod, web 30 rps and 200%
// of its CPU request (over its 800m limit), infer 135% of its GPU (over
// 100) and 50% of its CPU, db 12 rps and 50% of its CPU.
func testLoad() *Load {
	l := &Load{}
	l.Set(WorkloadLoad{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(90.0), CPUWork: ptr.To(600.0)})
	l.Set(WorkloadLoad{Namespace: "shop", Kind: "Deployment", Name: "infer", GPUWork: ptr.To(270.0), CPUWork: ptr.To(100.0)})
	l.Set(WorkloadLoad{Namespace: "shop", Kind: "StatefulSet", Name: "db", RPS: ptr.To(12.0), CPUWork: ptr.To(50.0)})
	l.Set(WorkloadLoad{Namespace: "shop", Kind: "Deployment", Name: "ghost", RPS: ptr.To(5.0)})
	l.SetQueue("orders", 42)
	l.SetQueue("returns", 3)
	return l
}

func newTestServer(t *testing.T) *Server {
	return newServer(t, testNow, append(testCluster(), loadConfigMap(t, testLoad()))...)
}

// customValues is a metric list's values by NAMESPACE/NAME, in
// thousandths.
func customValues(l *cmv1beta2.MetricValueList) map[string]int64 {
	out := map[string]int64{}
	for _, it := range l.Items {
		out[it.DescribedObject.Namespace+"/"+it.DescribedObject.Name] = it.Value.MilliValue()
	}
	return out
}

func TestCustomMetrics(t *testing.T) {
	s := newTestServer(t)
	const base = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/"
	tests := []struct {
		name, path string
		want       map[string]int64
	}{
		{
			"rps over Ready pods",
			base + "shop/pods/*/requests_per_second?labelSelector=app%3Dweb",
			map[string]int64{"shop/web-a": 30000, "shop/web-b": 30000, "shop/web-c": 30000},
		},
		{"a named pod", base + "shop/pods/web-b/requests_per_second", map[string]int64{"shop/web-b": 30000}},
		{"a StatefulSet's pod", base + "shop/pods/*/requests_per_second?labelSelector=app%3Ddb", map[string]int64{"shop/db-0": 12000}},
		{
			"a workload with no rps set",
			base + "shop/pods/*/requests_per_second?labelSelector=app%3Dinfer",
			map[string]int64{"shop/infer-a": 0, "shop/infer-b": 0},
		},
		{"a pod no loaded workload owns", base + "other/pods/*/requests_per_second", map[string]int64{"other/web-x": 0}},
		{
			"GPU utilisation of GPU pods only, capped at 100",
			base + "shop/pods/*/DCGM_FI_DEV_GPU_UTIL",
			map[string]int64{"shop/infer-a": 100000, "shop/infer-b": 100000},
		},
		{"GPU utilisation of pods holding none", base + "shop/pods/*/DCGM_FI_DEV_GPU_UTIL?labelSelector=app%3Dweb", map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got cmv1beta2.MetricValueList
			get(t, s, tt.path, &got)
			if diff := cmp.Diff(tt.want, customValues(&got)); diff != "" {
				t.Errorf("values in thousandths (-want +got):\n%s", diff)
			}
			if got.Kind != "MetricValueList" || got.APIVersion != "custom.metrics.k8s.io/v1beta2" {
				t.Errorf("list is %s %s", got.APIVersion, got.Kind)
			}
			metric := tt.path[strings.LastIndex(tt.path, "/")+1:]
			metric, _, _ = strings.Cut(metric, "?")
			for _, it := range got.Items {
				if it.DescribedObject.Kind != "Pod" || it.Metric.Name != metric ||
					!it.Timestamp.Equal(&metav1.Time{Time: testNow}) || it.WindowSeconds == nil || *it.WindowSeconds != window {
					t.Errorf("item %+v: want a Pod's %s at %s over %ds", it, metric, testNow, window)
				}
			}
		})
	}
}

func TestCustomMetricsNotFound(t *testing.T) {
	s := newTestServer(t)
	const base = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/"
	tests := []struct {
		name, path string
		want       []string // in the message
	}{
		{"a pod that is not Ready", base + "pods/web-unready/requests_per_second", []string{"shop/web-unready", "Ready"}},
		{"a Pending pod", base + "pods/web-pending/requests_per_second", []string{"shop/web-pending"}},
		{"a pod that is not there", base + "pods/nope/requests_per_second", []string{"shop/nope"}},
		{"a pod the selector leaves out", base + "pods/web-a/requests_per_second?labelSelector=app%3Ddb", []string{"shop/web-a", "selector"}},
		{"GPU utilisation of a pod holding none", base + "pods/web-a/DCGM_FI_DEV_GPU_UTIL", []string{"shop/web-a", "DCGM_FI_DEV_GPU_UTIL"}},
		{"an unknown metric", base + "pods/*/http_requests", []string{"http_requests", "requests_per_second", "DCGM_FI_DEV_GPU_UTIL"}},
		{"another resource", base + "services/web/requests_per_second", []string{"pods only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, st := serve(t, s, http.MethodGet, tt.path, nil)
			if code != http.StatusNotFound {
				t.Fatalf("GET %s: %d, want 404", tt.path, code)
			}
			if st.Reason != metav1.StatusReasonNotFound {
				t.Errorf("reason %q, want NotFound", st.Reason)
			}
			for _, w := range tt.want {
				if !strings.Contains(st.Message, w) {
					t.Errorf("message %q does not name %q", st.Message, w)
				}
			}
		})
	}
}

func TestExternalMetrics(t *testing.T) {
	s := newTestServer(t)
	const base = "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/"
	tests := []struct {
		name, path string
		want       map[string]int64 // depth by queue
	}{
		{"a set queue", base + "rabbitmq_queue_messages_ready?labelSelector=queue%3Dorders", map[string]int64{"orders": 42}},
		{"a queue no one set", base + "rabbitmq_queue_messages_ready?labelSelector=queue%3Dinvoices", map[string]int64{"invoices": 0}},
		{"no selector", base + "kafka_consumergroup_lag", map[string]int64{"orders": 42, "returns": 3}},
		{"a set-based selector", base + "aws_sqs_approximate_number_of_messages_visible_average?labelSelector=queue+notin+%28orders%29", map[string]int64{"returns": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got emv1beta1.ExternalMetricValueList
			get(t, s, tt.path, &got)
			metric, _, _ := strings.Cut(strings.TrimPrefix(tt.path, base), "?")
			depths := map[string]int64{}
			for _, it := range got.Items {
				depths[it.MetricLabels[v1alpha1.MetricQueueLabel]] = it.Value.Value()
				if it.MetricName != metric || len(it.MetricLabels) != 1 || !it.Timestamp.Equal(&metav1.Time{Time: testNow}) {
					t.Errorf("item %+v: want %s of one queue at %s", it, metric, testNow)
				}
			}
			if diff := cmp.Diff(tt.want, depths); diff != "" {
				t.Errorf("depths (-want +got):\n%s", diff)
			}
		})
	}

	code, st := serve(t, s, http.MethodGet, base+"nats_pending?labelSelector=queue%3Dorders", nil)
	if code != http.StatusNotFound {
		t.Fatalf("an unknown metric: %d, want 404", code)
	}
	for _, w := range []string{"nats_pending", "rabbitmq_queue_messages_ready", "kafka_consumergroup_lag", "aws_sqs_approximate_number_of_messages_visible_average", "queue=NAME"} {
		if !strings.Contains(st.Message, w) {
			t.Errorf("message %q does not name %q", st.Message, w)
		}
	}
	if code, _ := serve(t, s, http.MethodGet, "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop", nil); code != http.StatusNotFound {
		t.Errorf("a namespace without a metric: %d, want 404", code)
	}
}

func TestDiscovery(t *testing.T) {
	s := newTestServer(t)
	type res struct {
		Name, Kind string
		Namespaced bool
	}
	tests := []struct {
		gv   string
		want []res
	}{
		{"custom.metrics.k8s.io/v1beta2", []res{
			{"pods/requests_per_second", "MetricValueList", true},
			{"pods/DCGM_FI_DEV_GPU_UTIL", "MetricValueList", true},
		}},
		{"external.metrics.k8s.io/v1beta1", []res{
			{"aws_sqs_approximate_number_of_messages_visible_average", "ExternalMetricValueList", true},
			{"kafka_consumergroup_lag", "ExternalMetricValueList", true},
			{"rabbitmq_queue_messages_ready", "ExternalMetricValueList", true},
		}},
		{"metrics.k8s.io/v1beta1", []res{
			{"nodes", "NodeMetrics", false},
			{"pods", "PodMetrics", true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.gv, func(t *testing.T) {
			var got metav1.APIResourceList
			get(t, s, "/apis/"+tt.gv, &got)
			if got.GroupVersion != tt.gv || got.Kind != "APIResourceList" {
				t.Errorf("groupVersion %q kind %q, want %q APIResourceList", got.GroupVersion, got.Kind, tt.gv)
			}
			var have []res
			for _, r := range got.APIResources {
				have = append(have, res{r.Name, r.Kind, r.Namespaced})
				if diff := cmp.Diff(metav1.Verbs{"get", "list"}, r.Verbs); diff != "" {
					t.Errorf("%s verbs (-want +got):\n%s", r.Name, diff)
				}
			}
			if diff := cmp.Diff(tt.want, have); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
	// Every group version the controller registers is served.
	for _, gv := range GroupVersions {
		get(t, s, "/apis/"+gv.String(), nil)
	}
}

func TestServeErrors(t *testing.T) {
	s := newTestServer(t)
	tests := []struct {
		name, method, path string
		code               int
	}{
		{"aggregated discovery", http.MethodGet, "/apis", http.StatusNotFound},
		{"a group", http.MethodGet, "/apis/metrics.k8s.io", http.StatusNotFound},
		{"openapi", http.MethodGet, "/openapi/v2", http.StatusNotFound},
		{"a group not served", http.MethodGet, "/apis/apps/v1", http.StatusNotFound},
		{"a version not served", http.MethodGet, "/apis/custom.metrics.k8s.io/v1beta1", http.StatusNotFound},
		{"a resource not served", http.MethodGet, "/apis/metrics.k8s.io/v1beta1/services", http.StatusNotFound},
		{"a bad selector", http.MethodGet, "/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%3D%3D%3D", http.StatusBadRequest},
		{"a POST", http.MethodPost, "/apis/metrics.k8s.io/v1beta1/pods", http.StatusMethodNotAllowed},
		{"a DELETE", http.MethodDelete, "/apis/custom.metrics.k8s.io/v1beta2", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, st := serve(t, s, tt.method, tt.path, nil); code != tt.code {
				t.Errorf("%s %s: %d %+v, want %d", tt.method, tt.path, code, st, tt.code)
			}
		})
	}
}

func TestServeLoadConfigMap(t *testing.T) {
	// No ConfigMap is no load.
	s := newServer(t, testNow, testCluster()...)
	var list cmv1beta2.MetricValueList
	get(t, s, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/requests_per_second?labelSelector=app%3Dweb", &list)
	if diff := cmp.Diff(map[string]int64{"shop/web-a": 0, "shop/web-b": 0, "shop/web-c": 0}, customValues(&list)); diff != "" {
		t.Errorf("with no load (-want +got):\n%s", diff)
	}

	garbage := loadConfigMap(t, &Load{})
	garbage.Data[loadKey] = "queues: [not, a, map"
	s = newServer(t, testNow, append(testCluster(), garbage)...)
	code, st := serve(t, s, http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes", nil)
	if code != http.StatusInternalServerError || !strings.Contains(st.Message, "kube-system/berth-load") {
		t.Errorf("a ConfigMap that is not a load: %d %+v, want 500 naming it", code, st)
	}
}

func TestServePlayback(t *testing.T) {
	l := testLoad()
	l.Playback = &Playback{
		Started: metav1.NewTime(testNow.Add(-10 * time.Minute)),
		Speed:   60,
		Profile: Profile{Steps: []Step{
			{
				At: metav1.Duration{Duration: 5 * time.Hour},
				Workloads: []WorkloadLoad{
					{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(30.0)},
					{Namespace: "shop", Kind: "Deployment", Name: "infer", GPUWork: ptr.To(120.0)},
				},
				Queues: map[string]int64{"orders": 7},
			},
			{
				At:        metav1.Duration{Duration: 20 * time.Hour},
				Workloads: []WorkloadLoad{{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(300.0)}},
				Queues:    map[string]int64{"orders": 0},
			},
		}},
	}
	s := newServer(t, testNow, append(testCluster(), loadConfigMap(t, l))...)
	const custom = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/"
	const orders = "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/rabbitmq_queue_messages_ready?labelSelector=queue%3Dorders"
	tests := []struct {
		name     string
		now      time.Time
		rps, gpu int64 // per pod, in thousandths
		orders   int64
	}{
		{"10 minutes in: the 5h step", testNow, 10000, 60000, 7},
		{"20 minutes in: the 20h step", testNow.Add(10 * time.Minute), 100000, 60000, 0},
		{"before the playback started", testNow.Add(-11 * time.Minute), 30000, 100000, 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.Now = func() time.Time { return tt.now }
			var rps, gpu cmv1beta2.MetricValueList
			get(t, s, custom+"web-a/requests_per_second", &rps)
			get(t, s, custom+"infer-a/DCGM_FI_DEV_GPU_UTIL", &gpu)
			if got := customValues(&rps)["shop/web-a"]; got != tt.rps {
				t.Errorf("web-a rps = %dm, want %dm", got, tt.rps)
			}
			if got := customValues(&gpu)["shop/infer-a"]; got != tt.gpu {
				t.Errorf("infer-a GPU = %dm, want %dm", got, tt.gpu)
			}
			var q emv1beta1.ExternalMetricValueList
			get(t, s, orders, &q)
			if len(q.Items) != 1 || q.Items[0].Value.Value() != tt.orders {
				t.Errorf("orders = %+v, want %d", q.Items, tt.orders)
			}
		})
	}
}
