package dash

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/objtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// now is the fixture's clock: the pages' ages are counted from it.
var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// secretValue is the fixture Secret's data; no page may carry it.
const secretValue = "s3cr3t-do-not-show"

// fixture is a small retail cluster: every pool but gpu with nodes, a
// team-a training pod waiting for the gpu pool to grow, team-b's GPU
// quota full and a Job it refuses, the autoscaler's status, an HPA, a
// budget and a Secret.
func fixture(t *testing.T) (*fake.Clientset, *v1alpha1.Blueprint) {
	t.Helper()
	bp, err := blueprint.LoadTemplate("retail")
	if err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(now.Add(-90 * time.Second))
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rabbitmq"}, Data: map[string][]byte{"host": []byte(secretValue)}},
	}
	for i, name := range []string{"system-0", "system-1"} {
		_ = i
		objs = append(objs, objtest.MakeNode(name).Pool("system").CPU("4").Memory("16Gi").Taint("CriticalAddonsOnly=true:NoSchedule").Ready().Obj())
	}
	for _, name := range []string{"cpu-0", "cpu-1", "cpu-2", "cpu-3"} {
		objs = append(objs, objtest.MakeNode(name).Pool("cpu").CPU("16").Memory("64Gi").Ready().Obj())
	}
	for _, name := range []string{"spot-gpu-0", "spot-gpu-1"} {
		objs = append(objs, objtest.MakeNode(name).Pool("spot-gpu").CPU("24").Memory("96Gi").GPUs("1").
			Taint("gpu=true:NoSchedule").Taint("berth.io/capacity=spot:NoSchedule").Ready().Obj())
	}
	objs = append(objs,
		objtest.MakePod("team-a", "etl-0").CPU("6").Memory("8Gi").On("cpu-0").Ready().Obj(),
		objtest.MakePod("team-b", "train-b-0").GPU("1").CPU("8").Tolerate("gpu").Tolerate(v1alpha1.LabelCapacity).On("spot-gpu-0").Owner("Job", "train-b").Ready().Obj(),
		objtest.MakePod("team-b", "train-b-1").GPU("1").CPU("8").Tolerate("gpu").Tolerate(v1alpha1.LabelCapacity).On("spot-gpu-1").Owner("Job", "train-b").Ready().Obj(),
		objtest.MakePod("team-a", "train-a-x7k2p").GPU("1").CPU("4").Tolerate("gpu").NodeSelector(v1alpha1.LabelPool, "gpu").Owner("Job", "train-a").
			Unschedulable("0/8 nodes are available: 8 node(s) didn't match Pod's node affinity/selector.").Obj(),
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "more", UID: "team-b/more"}, Spec: batchv1.JobSpec{Parallelism: ptr(int32(1))}},
		quota("team-a", "team-a", "4", "1"),
		quota("team-b", "team-b", "2", "2"),
		event("team-a", "Pod", "train-a-x7k2p", castatus.ReasonTriggeredScaleUp, castatus.TriggeredMessage([]castatus.ScaleUp{{Pool: "gpu", From: 0, To: 1, Max: 2}}), at),
		event("team-b", "Job", "more", "FailedCreate", `Error creating: pods "more-abcde" is forbidden: exceeded quota: team-b, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2`, at),
		event("team-a", "HorizontalPodAutoscaler", "embed", "SuccessfulRescale", "New size: 3; reason: cpu resource utilization (percentage of request) above target", metav1.NewTime(now.Add(-10*time.Minute))),
		autoscalerStatus(t, at),
		&autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "embed"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "embed", APIVersion: "apps/v1"},
				MinReplicas:    ptr(int32(2)), MaxReplicas: 6,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(70))}}}},
			},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 3, CurrentMetrics: []autoscalingv2.MetricStatus{{
				Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
					Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(85))}}}}},
		},
		&policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "embed"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(2))},
			Status:     policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3, DisruptionsAllowed: 1},
		},
	)
	c := fake.NewClientset(objs...)
	// The fake ignores field selectors; status and why rely on them.
	c.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.ListAction)
		sel := l.GetListRestrictions().Fields
		if sel == nil || sel.Empty() {
			return false, nil, nil
		}
		obj, err := c.Tracker().List(a.GetResource(), a.GetResource().GroupVersion().WithKind(listKind(a.GetResource().Resource)), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			return true, nil, err
		}
		var kept []runtime.Object
		for _, it := range items {
			if sel.Matches(fieldSet(it)) {
				kept = append(kept, it)
			}
		}
		return true, obj, meta.SetList(obj, kept)
	})
	return c, bp
}

func listKind(resource string) string {
	return map[string]string{"pods": "Pod", "events": "Event"}[resource]
}

// fieldSet is the fields the API server lets pods and events be selected by.
func fieldSet(obj runtime.Object) fields.Set {
	switch o := obj.(type) {
	case *corev1.Pod:
		return fields.Set{"spec.nodeName": o.Spec.NodeName, "status.phase": string(o.Status.Phase)}
	case *corev1.Event:
		return fields.Set{"reason": o.Reason, "involvedObject.kind": o.InvolvedObject.Kind, "involvedObject.name": o.InvolvedObject.Name,
			"involvedObject.uid": string(o.InvolvedObject.UID), "involvedObject.namespace": o.InvolvedObject.Namespace}
	}
	return fields.Set{}
}

func ptr[T any](v T) *T { return &v }

func quota(ns, name, hard, used string) *corev1.ResourceQuota {
	gpu := corev1.ResourceName("requests." + objtest.GPU)
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{gpu: resource.MustParse(hard), corev1.ResourceRequestsCPU: resource.MustParse("64")},
			Used: corev1.ResourceList{gpu: resource.MustParse(used), corev1.ResourceRequestsCPU: resource.MustParse("16")},
		},
	}
}

// event is about ns/name, whose UID objtest's pods and the fixture's
// Job have.
func event(ns, kind, name, reason, msg string, at metav1.Time) *corev1.Event {
	uid := types.UID(ns + "/" + name)
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name + "." + strings.ToLower(reason)},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name, UID: uid},
		Reason:         reason, Message: msg, Type: corev1.EventTypeNormal, Count: 1, FirstTimestamp: at, LastTimestamp: at,
	}
}

func autoscalerStatus(t *testing.T, at metav1.Time) *corev1.ConfigMap {
	t.Helper()
	data, err := castatus.Data(&castatus.Status{Time: castatus.FormatTime(at.Time), AutoscalerStatus: castatus.Running},
		&castatus.Activity{Pools: []castatus.PoolActivity{
			{Name: "cpu", Target: 4, Min: 4, Max: 8, Ready: 4},
			{Name: "gpu", Target: 1, Min: 0, Max: 2, Upcoming: 1, LastScaleUp: &castatus.Event{Time: at, From: 0, To: 1, Reason: "1 pod(s) pending: team-a/train-a-x7k2p"}},
			{Name: "spot-gpu", Target: 2, Min: 0, Max: 4, Ready: 2},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: castatus.ConfigMapNamespace, Name: castatus.ConfigMapName}, Data: data}
}

// serve starts a server on the fixture and waits for its first reading.
func serve(t *testing.T, c *fake.Clientset, bp *v1alpha1.Blueprint, reports string) (*Server, string) {
	t.Helper()
	s, err := New(Options{Client: c, Blueprint: bp, Context: "berth-local", Listen: "127.0.0.1:8470", Reports: reports, Now: func() time.Time { return now }, Settle: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	snap, err := s.current(wait)
	if snap == nil {
		t.Fatalf("no first reading: %v", err)
	}
	return s, "127.0.0.1:8470"
}

func get(t testing.TB, h http.Handler, host, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	// A stream that was let through ends here, and its status is seen.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+path, nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/dash -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test ./internal/dash -update rewrites it):\n%s", path, diff)
	}
}

func TestPagesGolden(t *testing.T) {
	c, bp := fixture(t)
	s, host := serve(t, c, bp, "testdata/reports")
	h := s.Handler()
	for _, p := range []struct{ path, file string }{
		{"/", "overview.html"},
		{"/waiting", "waiting.html"},
		{"/activity", "activity.html"},
		{"/activity?pool=gpu", "activity-gpu.html"},
		{"/workloads", "workloads.html"},
		{"/rehearsals", "rehearsals.html"},
		{"/rehearsals/compared", "rehearsal.html"},
		{"/rehearsals/repeated", "rehearsal-repeated.html"},
	} {
		t.Run(p.file, func(t *testing.T) {
			w := get(t, h, host, p.path, nil)
			if w.Code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", p.path, w.Code, w.Body)
			}
			golden(t, p.file, w.Body.Bytes())
		})
	}
}

// A rehearsal's own page is served where the directory has one, and a
// set of replications' page is its figures.html, not a report.html.
func TestRehearsalPages(t *testing.T) {
	c, bp := fixture(t)
	s, host := serve(t, c, bp, "testdata/reports")
	h := s.Handler()
	for _, p := range []struct {
		path string
		code int
		file string
	}{
		{"/rehearsals/compared/report.html", http.StatusOK, "testdata/reports/compared/report.html"},
		{"/rehearsals/repeated/figures.html", http.StatusOK, "testdata/reports/repeated/figures.html"},
		{"/rehearsals/repeated/report.html", http.StatusNotFound, ""},
		{"/rehearsals/compared/figures.html", http.StatusNotFound, ""},
		{"/rehearsals/week/report.html", http.StatusNotFound, ""},
	} {
		w := get(t, h, host, p.path, nil)
		if w.Code != p.code {
			t.Errorf("GET %s: %d, want %d", p.path, w.Code, p.code)
			continue
		}
		if p.file == "" {
			continue
		}
		want, err := os.ReadFile(p.file)
		if err != nil {
			t.Fatal(err)
		}
		if w.Body.String() != string(want) {
			t.Errorf("GET %s is not %s", p.path, p.file)
		}
	}
}

func TestJSONGolden(t *testing.T) {
	c, bp := fixture(t)
	s, host := serve(t, c, bp, "testdata/reports")
	h := s.Handler()
	for _, name := range []string{"overview", "waiting", "activity", "workloads", "rehearsals"} {
		t.Run(name, func(t *testing.T) {
			w := get(t, h, host, "/api/"+name, nil)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("GET /api/%s: %d %s %s", name, w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			golden(t, name+".json", w.Body.Bytes())
		})
	}
}

// The overview's figures are status's: the GPU pool's nodes and GPUs,
// and team-b's quota at its limit.
func TestOverviewNumbers(t *testing.T) {
	c, bp := fixture(t)
	s, _ := serve(t, c, bp, "")
	snap, _ := s.current(context.Background())
	byName := map[string]PoolRow{}
	for _, p := range snap.overview.Pools {
		byName[p.Name] = p
	}
	spot := byName["spot-gpu"]
	if spot.Ready != 2 || spot.Total != 2 || spot.GPU == nil || spot.GPU.Used != "2" || spot.GPU.Total != "2" || spot.Capacity != "Spot" || spot.Target != 2 {
		t.Errorf("spot-gpu = %+v; want 2/2 nodes Ready, 2/2 GPUs, Spot, target 2", spot)
	}
	if g := byName["gpu"]; g.Total != 0 || g.Size != "0-2" || g.Target != 1 {
		t.Errorf("gpu = %+v; want no nodes yet, size 0-2, target 1", g)
	}
}

func TestRefusesForeignHostAndOrigin(t *testing.T) {
	c, bp := fixture(t)
	s, _ := serve(t, c, bp, "")
	h := s.Handler()
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:8470", "", http.StatusOK},
		{"localhost:8470", "http://localhost:8470", http.StatusOK},
		{"[::1]:8470", "", http.StatusOK},
		// DNS rebinding: a name of the attacker's resolving to 127.0.0.1.
		{"evil.example:8470", "", http.StatusForbidden},
		{"127.0.0.1:8470", "http://evil.example", http.StatusForbidden},
		{"127.0.0.1:8470", "null", http.StatusForbidden},
		{"127.0.0.1:9999", "", http.StatusForbidden},
		{"127.0.0.1", "", http.StatusForbidden},
	} {
		for _, path := range []string{"/", "/api/overview", "/events"} {
			if path == "/events" && tc.want == http.StatusOK {
				continue // a stream: not answered until it ends
			}
			hdr := map[string]string{}
			if tc.origin != "" {
				hdr["Origin"] = tc.origin
			}
			if w := get(t, h, tc.host, path, hdr); w.Code != tc.want {
				t.Errorf("GET %s Host %s Origin %q: %d; want %d", path, tc.host, tc.origin, w.Code, tc.want)
			}
		}
	}
}

func TestAllowedHostsListeningEverywhere(t *testing.T) {
	ok := allowedHosts("0.0.0.0:8470")
	for h, want := range map[string]bool{"192.168.1.20:8470": true, "127.0.0.1:8470": true, "evil.example:8470": false, "192.168.1.20:80": false} {
		if got := ok(h); got != want {
			t.Errorf("Host %s on 0.0.0.0:8470: allowed %v; want %v", h, got, want)
		}
	}
}

// No request the server makes touches a Secret, and no page carries one.
func TestNoSecretRead(t *testing.T) {
	c, bp := fixture(t)
	s, host := serve(t, c, bp, "testdata/reports")
	h := s.Handler()
	var bodies []string
	for _, path := range []string{"/", "/waiting", "/activity", "/workloads", "/rehearsals", "/api/overview", "/api/waiting", "/api/activity", "/api/workloads"} {
		bodies = append(bodies, get(t, h, host, path, nil).Body.String())
	}
	if len(c.Actions()) == 0 {
		t.Fatal("the server made no request: the check below would pass on nothing")
	}
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "secrets" {
			t.Errorf("the server %s secrets", a.GetVerb())
		}
	}
	for i, b := range bodies {
		if strings.Contains(b, secretValue) {
			t.Errorf("page %d carries the Secret's data", i)
		}
	}
}

// A change in the cluster reaches an open event stream, naming the page
// whose content changed.
func TestChangeReachesTheStream(t *testing.T) {
	c, bp := fixture(t)
	s, host := serve(t, c, bp, "")
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/events", nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := c.CoreV1().Nodes().Create(context.Background(), objtest.MakeNode("gpu-0").Pool("gpu").CPU("24").Memory("96Gi").GPUs("1").Ready().Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		buf := make([]byte, 512)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if strings.Contains(b.String(), "event: changed") && strings.Contains(b.String(), "\n\n") && strings.Contains(b.String(), "overview") {
				got <- b.String()
				return
			}
			if err != nil {
				got <- b.String() + " (" + err.Error() + ")"
				return
			}
		}
	}()
	select {
	case out := <-got:
		if !strings.Contains(out, "overview") {
			t.Fatalf("stream: %q; want a change of the overview", out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change on the stream within 5s of a new node")
	}
	w := get(t, s.Handler(), host, "/", map[string]string{fragmentHeader: "1"})
	if !strings.Contains(w.Body.String(), `data-pool="gpu"`) || strings.Contains(w.Body.String(), "<html") {
		t.Fatalf("the fragment is not the overview's content alone:\n%s", w.Body)
	}
	_ = io.Discard
}

// The Models page lists the store's models, versions and aliases, and
// says so when no store is configured.
func TestModelsPage(t *testing.T) {
	c, bp := fixture(t)
	s, host := serve(t, c, bp, "")
	if body := get(t, s.Handler(), host, "/models", nil).Body.String(); !strings.Contains(body, "No model store is configured") {
		t.Errorf("without a store, the Models page does not say so:\n%s", body)
	}
	st, err := store.Open("file://" + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := &model.Registry{Store: st}
	weights := filepath.Join(t.TempDir(), "weights.bin")
	if err := os.WriteFile(weights, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := reg.Push(ctx, "embedder", weights, model.PushOptions{Metrics: map[string]float64{"recall": 0.91}}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Promote(ctx, "embedder", 1, "prod", "first"); err != nil {
		t.Fatal(err)
	}
	s.o.Models = reg
	body := get(t, s.Handler(), host, "/models", nil).Body.String()
	for _, want := range []string{`data-model="embedder"`, "prod → v1", "<th scope=\"row\">v1</th>", "recall 0.91", "first"} {
		if !strings.Contains(body, want) {
			t.Errorf("the Models page lacks %q:\n%s", want, body)
		}
	}
}
