package metricsapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// usage is a resource usage in millicores and bytes.
type usage struct{ CPU, Memory int64 }

func usageOf(l corev1.ResourceList) usage {
	return usage{l.Cpu().MilliValue(), l.Memory().Value()}
}

const mi = 1 << 20

func TestResourceMetricsPods(t *testing.T) {
	s := newTestServer(t)
	const base = "/apis/metrics.k8s.io/v1beta1/"
	// web: 200% of 500m is capped at its 800m limit; web-unready carries
	// no load but holds its memory; web-pending is not running.
	shop := map[string]usage{
		"shop/db-0":        {50, 64 * mi},
		"shop/infer-a":     {500, 1024 * mi},
		"shop/infer-b":     {500, 1024 * mi},
		"shop/web-a":       {800, 256 * mi},
		"shop/web-b":       {800, 256 * mi},
		"shop/web-c":       {800, 256 * mi},
		"shop/web-unready": {0, 256 * mi},
	}
	pick := func(from map[string]usage, names ...string) map[string]usage {
		out := map[string]usage{}
		for _, n := range names {
			out[n] = from[n]
		}
		return out
	}
	all := map[string]usage{"other/web-x": {0, 128 * mi}}
	for k, v := range shop {
		all[k] = v
	}
	tests := []struct {
		name, path string
		want       map[string]usage
	}{
		{"a namespace", base + "namespaces/shop/pods", shop},
		{"a selector", base + "namespaces/shop/pods?labelSelector=app%3Dweb", pick(shop, "shop/web-a", "shop/web-b", "shop/web-c", "shop/web-unready")},
		{"every namespace", base + "pods", all},
		{"every namespace by selector", base + "pods?labelSelector=app%3Dweb", pick(all, "shop/web-a", "shop/web-b", "shop/web-c", "shop/web-unready", "other/web-x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got mv1beta1.PodMetricsList
			get(t, s, tt.path, &got)
			have := map[string]usage{}
			for _, p := range got.Items {
				if len(p.Containers) != 1 || p.Containers[0].Name != "main" {
					t.Fatalf("%s/%s: containers %+v, want main alone", p.Namespace, p.Name, p.Containers)
				}
				have[p.Namespace+"/"+p.Name] = usageOf(p.Containers[0].Usage)
				if !p.Timestamp.Equal(&metav1.Time{Time: testNow}) || p.Window.Duration != window*time.Second {
					t.Errorf("%s/%s: at %s over %s, want %s over %ds", p.Namespace, p.Name, p.Timestamp, p.Window.Duration, testNow, window)
				}
			}
			if diff := cmp.Diff(tt.want, have); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}

	var one mv1beta1.PodMetrics
	get(t, s, base+"namespaces/shop/pods/infer-b", &one)
	if one.Kind != "PodMetrics" || one.Name != "infer-b" || one.Labels["app"] != "infer" || usageOf(one.Containers[0].Usage) != shop["shop/infer-b"] {
		t.Errorf("infer-b: %+v", one)
	}
	for _, name := range []string{"web-pending", "nope"} {
		if code, _ := serve(t, s, http.MethodGet, base+"namespaces/shop/pods/"+name, nil); code != http.StatusNotFound {
			t.Errorf("pod %s: %d, want 404", name, code)
		}
	}
}

func TestResourceMetricsNodes(t *testing.T) {
	s := newTestServer(t)
	const base = "/apis/metrics.k8s.io/v1beta1/nodes"
	// The sums of each node's Running pods: n1's Pending pod adds
	// nothing, n2's pod that is not Ready only its memory.
	want := map[string]usage{
		"gpu-1": {1000, 2048 * mi},
		"idle":  {0, 0},
		"n1":    {1600, 512 * mi},
		"n2":    {800, 512 * mi},
		"n3":    {50, 192 * mi},
	}
	var list mv1beta1.NodeMetricsList
	get(t, s, base, &list)
	have := map[string]usage{}
	for _, n := range list.Items {
		have[n.Name] = usageOf(n.Usage)
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("node usage (-want +got):\n%s", diff)
	}
	if list.Kind != "NodeMetricsList" {
		t.Errorf("kind %q, want NodeMetricsList", list.Kind)
	}

	var n2 mv1beta1.NodeMetrics
	get(t, s, base+"/n2", &n2)
	if n2.Kind != "NodeMetrics" || n2.Name != "n2" || usageOf(n2.Usage) != want["n2"] {
		t.Errorf("node n2: %+v, want usage %+v", n2, want["n2"])
	}
	get(t, s, base+"?labelSelector=kubernetes.io%2Fhostname%3Dn3", &list)
	if len(list.Items) != 1 || list.Items[0].Name != "n3" {
		t.Errorf("nodes by selector: %+v, want n3 alone", list.Items)
	}
	code, st := serve(t, s, http.MethodGet, base+"/nope", nil)
	if code != http.StatusNotFound || !strings.Contains(st.Message, "nope") {
		t.Errorf("an unknown node: %d %+v, want 404 naming it", code, st)
	}
}
