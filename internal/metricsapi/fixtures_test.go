package metricsapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

// resources is a resource list from names and quantities:
// resources("cpu", "500m", "memory", "256Mi").
func resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func deployment(namespace, name string, selector map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}},
	}
}

func statefulSet(namespace, name string, selector map[string]string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}},
	}
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

// loadConfigMap is kube-system/berth-load holding l, as `berth load`
// writes it.
func loadConfigMap(t *testing.T, l *Load) *corev1.ConfigMap {
	t.Helper()
	data, err := yaml.Marshal(l)
	if err != nil {
		t.Fatalf("encoding the load: %v", err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: LoadNamespace, Name: LoadConfigMap},
		Data:       map[string]string{loadKey: string(data)},
	}
}

// newServer is a Server reading objs through listers, at the time now.
func newServer(t *testing.T, now time.Time, objs ...runtime.Object) *Server {
	t.Helper()
	newIndexer := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	pods, nodes, deps, sets, cms := newIndexer(), newIndexer(), newIndexer(), newIndexer(), newIndexer()
	for _, o := range objs {
		var idx cache.Indexer
		switch o.(type) {
		case *corev1.Pod:
			idx = pods
		case *corev1.Node:
			idx = nodes
		case *appsv1.Deployment:
			idx = deps
		case *appsv1.StatefulSet:
			idx = sets
		case *corev1.ConfigMap:
			idx = cms
		default:
			t.Fatalf("newServer: no lister for %T", o)
		}
		if err := idx.Add(o); err != nil {
			t.Fatalf("adding %T: %v", o, err)
		}
	}
	return &Server{
		Pods:         corelisters.NewPodLister(pods),
		Nodes:        corelisters.NewNodeLister(nodes),
		Deployments:  appslisters.NewDeploymentLister(deps),
		StatefulSets: appslisters.NewStatefulSetLister(sets),
		Loads:        corelisters.NewConfigMapLister(cms).ConfigMaps(LoadNamespace),
		Now:          func() time.Time { return now },
	}
}

// serve sends method path to s and decodes a 200 answer into out (if
// not nil), or any other into a Status.
func serve(t *testing.T, s *Server, method, path string, out any) (int, *metav1.Status) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	if rec.Code != http.StatusOK {
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a Status: %v\n%s", method, path, rec.Code, err, rec.Body)
		}
		if st.Kind != "Status" || st.APIVersion != "v1" || int(st.Code) != rec.Code {
			t.Errorf("%s %s: Status %s/%s code %d, want v1/Status code %d", method, path, st.APIVersion, st.Kind, st.Code, rec.Code)
		}
		return rec.Code, &st
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s %s: decoding %T: %v\n%s", method, path, out, err, rec.Body)
		}
	}
	return rec.Code, nil
}

// get GETs path from s, failing the test unless it answers 200.
func get(t *testing.T, s *Server, path string, out any) {
	t.Helper()
	if code, st := serve(t, s, http.MethodGet, path, out); code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, st.Message)
	}
}
