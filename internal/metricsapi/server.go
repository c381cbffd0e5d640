package metricsapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	mv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
)

// The group versions served, one APIService each.
var (
	customGV   = schema.GroupVersion{Group: "custom.metrics.k8s.io", Version: "v1beta2"}
	externalGV = schema.GroupVersion{Group: "external.metrics.k8s.io", Version: "v1beta1"}
	resourceGV = schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	// GroupVersions are the APIs the server answers for.
	GroupVersions = []schema.GroupVersion{customGV, externalGV, resourceGV}
)

// Server answers the metrics APIs from the cluster's objects and load.
// It reads only listers, so a request costs no API call.
type Server struct {
	Pods         corelisters.PodLister
	Nodes        corelisters.NodeLister
	Deployments  appslisters.DeploymentLister
	StatefulSets appslisters.StatefulSetLister
	// Loads lists kube-system's ConfigMaps, among them berth-load.
	Loads corelisters.ConfigMapNamespaceLister
	Now   func() time.Time

	// starting is true from NewStartingServer until the Controller has
	// filled the listers: discovery is answered, metrics are not yet.
	starting atomic.Bool
}

// NewStartingServer is a Server to listen with before the API server
// starts: the aggregator's first discovery of the APIs succeeds at once
// (an APIService whose backend does not answer holds the API server's
// readiness back for seconds), and the Controller fills in the rest.
func NewStartingServer() *Server {
	s := &Server{Now: time.Now}
	s.starting.Store(true)
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{}, r.Method))
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 3 || parts[0] != "apis" {
		// /apis (aggregated discovery) and /openapi are not served: the
		// aggregator falls back to each version's resource list.
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	gv, rest := schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	if len(rest) == 0 {
		s.discovery(w, gv)
		return
	}
	if s.starting.Load() {
		writeStatus(w, apierrors.NewServiceUnavailable("berth's metrics server is starting: its caches have not synced yet"))
		return
	}
	load, err := s.load()
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	q := r.URL.Query()
	selector, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest("labelSelector: "+err.Error()))
		return
	}
	switch gv {
	case customGV:
		s.custom(w, rest, selector, load)
	case externalGV:
		s.external(w, rest, selector, load)
	case resourceGV:
		s.resource(w, rest, selector, load)
	default:
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: gv.Group}, gv.Version))
	}
}

// discovery answers /apis/GROUP/VERSION with the version's resources.
func (s *Server) discovery(w http.ResponseWriter, gv schema.GroupVersion) {
	switch gv {
	case customGV:
		writeJSON(w, resourceList(customGV, "MetricValueList", true, "pods/"+v1alpha1.MetricRequestsPerSecond, "pods/"+v1alpha1.MetricGPUUtil))
	case externalGV:
		names := make([]string, 0, len(queueMetrics))
		for _, m := range queueMetrics {
			names = append(names, m)
		}
		sort.Strings(names)
		writeJSON(w, resourceList(externalGV, "ExternalMetricValueList", true, names...))
	case resourceGV:
		writeJSON(w, resourceList(resourceGV, "", false, "nodes", "pods"))
	default:
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: gv.Group}, gv.Version))
	}
}

// load is the load in effect now.
func (s *Server) load() (*Load, error) {
	cm, err := s.Loads.Get(LoadConfigMap)
	if apierrors.IsNotFound(err) {
		return &Load{}, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := DecodeLoad(cm)
	if err != nil {
		return nil, err
	}
	return l.At(s.Now()), nil
}

// custom serves /namespaces/NS/pods/(NAME|*)/METRIC.
func (s *Server) custom(w http.ResponseWriter, rest []string, selector labels.Selector, load *Load) {
	if len(rest) != 5 || rest[0] != "namespaces" || rest[2] != "pods" {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: customGV.Group, Resource: strings.Join(rest, "/")},
			"berth serves custom metrics of pods only: /namespaces/NAMESPACE/pods/(NAME|*)/("+v1alpha1.MetricRequestsPerSecond+"|"+v1alpha1.MetricGPUUtil+")"))
		return
	}
	ns, name, metric := rest[1], rest[3], rest[4]
	if metric != v1alpha1.MetricRequestsPerSecond && metric != v1alpha1.MetricGPUUtil {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: customGV.Group, Resource: "pods/" + metric},
			fmt.Sprintf("%s: berth's local cluster serves %s and %s per pod", metric, v1alpha1.MetricRequestsPerSecond, v1alpha1.MetricGPUUtil)))
		return
	}
	pods, _ := s.Pods.Pods(ns).List(selector)
	shares := s.shares(load)
	now := metav1.NewTime(s.Now())
	list := &cmv1beta2.MetricValueList{TypeMeta: metav1.TypeMeta{APIVersion: customGV.String(), Kind: "MetricValueList"}}
	sortPods(pods)
	for _, p := range pods {
		if (name != "*" && p.Name != name) || !ready(p) {
			continue
		}
		sh := shares[p.Namespace+"/"+p.Name]
		v := sh.rps
		if metric == v1alpha1.MetricGPUUtil {
			if gpus(p) == 0 {
				continue // the DCGM exporter reports only pods holding GPUs
			}
			v = sh.gpuPercent
		}
		list.Items = append(list.Items, cmv1beta2.MetricValue{
			DescribedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "/v1", Namespace: p.Namespace, Name: p.Name},
			Metric:          cmv1beta2.MetricIdentifier{Name: metric},
			Timestamp:       now,
			WindowSeconds:   ptr.To[int64](window),
			Value:           quantity(v),
		})
	}
	if name != "*" && len(list.Items) == 0 {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"},
			fmt.Sprintf("%s/%s has no %s: it is not a Ready pod matching the selector (only Ready pods take traffic)", ns, name, metric)))
		return
	}
	writeJSON(w, list)
}

// external serves /namespaces/NS/METRIC?labelSelector=queue=NAME: the
// depth of each queue the selector picks. A queue the selector names
// exactly but no one has set is empty, as a real broker's would be.
func (s *Server) external(w http.ResponseWriter, rest []string, selector labels.Selector, load *Load) {
	if len(rest) != 3 || rest[0] != "namespaces" {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: externalGV.Group, Resource: strings.Join(rest, "/")}, "/namespaces/NAMESPACE/METRIC"))
		return
	}
	metric := rest[2]
	if !isQueueMetric(metric) {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: externalGV.Group, Resource: metric},
			fmt.Sprintf("%s: berth's local cluster serves queue depths as %s, %s and %s, with the selector %s=NAME",
				metric, queueMetrics["rabbitmq"], queueMetrics["kafka"], queueMetrics["sqs"], v1alpha1.MetricQueueLabel)))
		return
	}
	depths := map[string]int64{}
	if exact, ok := selector.RequiresExactMatch(v1alpha1.MetricQueueLabel); ok {
		depths[exact] = 0
	}
	for q, d := range load.Queues {
		depths[q] = d
	}
	names := make([]string, 0, len(depths))
	for q := range depths {
		if selector.Matches(labels.Set{v1alpha1.MetricQueueLabel: q}) {
			names = append(names, q)
		}
	}
	sort.Strings(names)
	now := metav1.NewTime(s.Now())
	list := &emv1beta1.ExternalMetricValueList{TypeMeta: metav1.TypeMeta{APIVersion: externalGV.String(), Kind: "ExternalMetricValueList"}}
	for _, q := range names {
		list.Items = append(list.Items, emv1beta1.ExternalMetricValue{
			MetricName:   metric,
			MetricLabels: map[string]string{v1alpha1.MetricQueueLabel: q},
			Timestamp:    now,
			Value:        *resourceQuantity(depths[q]),
		})
	}
	writeJSON(w, list)
}

// resource serves metrics-server's API: /nodes[/NAME], /pods,
// /namespaces/NS/pods[/NAME].
func (s *Server) resource(w http.ResponseWriter, rest []string, selector labels.Selector, load *Load) {
	now := metav1.NewTime(s.Now())
	win := metav1.Duration{Duration: window * time.Second}
	shares := s.shares(load)
	switch {
	case rest[0] == "nodes" && len(rest) <= 2:
		nodes, _ := s.Nodes.List(selector)
		usage := map[string]corev1.ResourceList{}
		all, _ := s.Pods.List(labels.Everything())
		for _, p := range all {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				continue
			}
			u := usage[p.Spec.NodeName]
			if u == nil {
				u = corev1.ResourceList{}
				usage[p.Spec.NodeName] = u
			}
			for _, c := range podUsage(p, shares) {
				for r, q := range c.Usage {
					sum := u[r]
					sum.Add(q)
					u[r] = sum
				}
			}
		}
		list := &mv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{APIVersion: resourceGV.String(), Kind: "NodeMetricsList"}}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
		for _, n := range nodes {
			if len(rest) == 2 && n.Name != rest[1] {
				continue
			}
			u := usage[n.Name]
			if u == nil {
				u = corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity(0), corev1.ResourceMemory: *resourceQuantity(0)}
			}
			list.Items = append(list.Items, mv1beta1.NodeMetrics{
				TypeMeta:   metav1.TypeMeta{APIVersion: resourceGV.String(), Kind: "NodeMetrics"},
				ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
				Timestamp:  now, Window: win, Usage: u,
			})
		}
		if len(rest) == 2 {
			if len(list.Items) == 0 {
				writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: resourceGV.Group, Resource: "nodes"}, rest[1]))
				return
			}
			writeJSON(w, list.Items[0])
			return
		}
		writeJSON(w, list)
	case rest[0] == "pods" && len(rest) == 1, rest[0] == "namespaces" && len(rest) >= 3 && len(rest) <= 4 && rest[2] == "pods":
		var pods []*corev1.Pod
		if rest[0] == "pods" {
			pods, _ = s.Pods.List(selector)
		} else {
			pods, _ = s.Pods.Pods(rest[1]).List(selector)
		}
		sortPods(pods)
		list := &mv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{APIVersion: resourceGV.String(), Kind: "PodMetricsList"}}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || (len(rest) == 4 && p.Name != rest[3]) {
				continue
			}
			list.Items = append(list.Items, mv1beta1.PodMetrics{
				TypeMeta:   metav1.TypeMeta{APIVersion: resourceGV.String(), Kind: "PodMetrics"},
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels},
				Timestamp:  now, Window: win, Containers: podUsage(p, shares),
			})
		}
		if len(rest) == 4 {
			if len(list.Items) == 0 {
				writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: resourceGV.Group, Resource: "pods"}, rest[3]))
				return
			}
			writeJSON(w, list.Items[0])
			return
		}
		writeJSON(w, list)
	default:
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: resourceGV.Group, Resource: strings.Join(rest, "/")}, ""))
	}
}

// shares is the load each Ready pod carries, by NAMESPACE/NAME: each
// loaded workload's load divided over its Ready pods.
func (s *Server) shares(load *Load) map[string]podLoad {
	out := map[string]podLoad{}
	for _, wl := range load.Workloads {
		o, ok := s.owner(wl)
		if !ok {
			continue
		}
		pods, _ := s.Pods.Pods(o.namespace).List(o.selector)
		var up []*corev1.Pod
		for _, p := range pods {
			if ready(p) {
				up = append(up, p)
			}
		}
		sh := share(wl, len(up))
		for _, p := range up {
			out[p.Namespace+"/"+p.Name] = sh
		}
	}
	return out
}

func (s *Server) owner(wl WorkloadLoad) (owner, bool) {
	return findOwner(s.Deployments, s.StatefulSets, wl.Namespace, wl.Kind, wl.Name)
}

// podUsage is each container's usage; a pod that is not Ready carries no
// load but still holds its memory.
func podUsage(p *corev1.Pod, shares map[string]podLoad) []mv1beta1.ContainerMetrics {
	sh := shares[p.Namespace+"/"+p.Name]
	out := make([]mv1beta1.ContainerMetrics, 0, len(p.Spec.Containers))
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		out = append(out, mv1beta1.ContainerMetrics{Name: c.Name, Usage: containerUsage(c, sh.cpuPercent)})
	}
	return out
}

func sortPods(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}

// resourceList is a version's discovery document.
func resourceList(gv schema.GroupVersion, kind string, namespaced bool, names ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, n := range names {
		k := kind
		if k == "" { // metrics.k8s.io: NodeMetrics, PodMetrics
			k = map[string]string{"nodes": "NodeMetrics", "pods": "PodMetrics"}[n]
			namespaced = n == "pods"
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: n, Namespaced: namespaced, Kind: k, Verbs: metav1.Verbs{"get", "list"},
		})
	}
	return l
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.APIVersion, st.Kind = "v1", "Status"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	json.NewEncoder(w).Encode(st)
}
