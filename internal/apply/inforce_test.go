package apply

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
)

// gpuOnly is a blueprint whose classes all have a priority and whose
// inference class runs on inferencePools.
func gpuOnly(t *testing.T, inferencePools string) *v1alpha1.Blueprint {
	t.Helper()
	bp, _, err := blueprint.Parse("gpu-only.yaml", []byte(`apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: gpu-only}
spec:
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  - {name: cpu, machine: {cpu: 8, memory: 32Gi}, count: 1}
  - {name: gpu, machine: {cpu: 8, memory: 32Gi, gpu: {count: 1, product: NVIDIA-L4}}, count: 1, taints: ["gpu=true:NoSchedule"]}
  teams:
  - {name: team-a, quota: {gpu: 1}}
  - {name: team-b}
  classes:
  - {name: inference, priority: high, pools: `+inferencePools+`}
  - {name: training, priority: low, preemption: Never, pools: [gpu]}
`))
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

// The probe of the class policies is a pod each class's policies place
// and its guardrails admit: at the class's priority class, asking a GPU
// when the class's pools all have GPUs, and then only where the team has
// a GPU quota.
func TestClassProbePods(t *testing.T) {
	for _, c := range []struct {
		pools string
		want  []string // namespace/class priorityClass gpu
	}{
		{"[gpu]", []string{"team-a/inference inference-high 1", "team-a/training training-low 1"}},
		{"[cpu, gpu]", []string{"team-a/inference inference-high 0", "team-b/inference inference-high 0", "team-a/training training-low 1"}},
	} {
		var got []string
		for _, p := range classProbePods(gpuOnly(t, c.pools)) {
			gpu := p.Spec.Containers[0].Resources.Limits[corev1.ResourceName(v1alpha1.DefaultGPUResource)]
			got = append(got, p.Namespace+"/"+p.Labels[v1alpha1.LabelClass]+" "+p.Spec.PriorityClassName+" "+gpu.String())
		}
		if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("inference on %s: probe pods %q; want %q", c.pools, got, c.want)
		}
	}
}

// When the probe times out, the error gives the API server's last
// answer, not the client's own refusal to wait past the deadline: here a
// client allowed one request a second, against a server that refuses
// every probe pod.
func TestWaitForGuardrailsGivesTheServersLastAnswer(t *testing.T) {
	const refusal = `pods "probe" is forbidden: berth/class-priority: refused by the test server`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(&metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Message: refusal, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden,
		})
	}))
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 1, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	bp := gpuOnly(t, "[gpu]")
	bp.Spec.Teams = bp.Spec.Teams[:1]
	err = WaitForGuardrails(context.Background(), c, bp, time.Second)
	if err == nil || !strings.Contains(err.Error(), refusal) || strings.Contains(err.Error(), "rate limiter") {
		t.Errorf("error %v; want the server's last answer %q", err, refusal)
	}
}

// Each kind the class policies mutate is probed on its own: the API
// server compiles each policy when its informers hold it, so pods placed
// say nothing of Jobs. Here a server places every kind but Jobs, and the
// wait names the Jobs' policy.
func TestWaitForGuardrailsProbesEveryKind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var obj map[string]any
		if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// The pod spec, where each kind keeps it (the typed client
		// sends no kind: the path's last part is the resource).
		resource := path.Base(r.URL.Path)
		spec := obj["spec"].(map[string]any)
		if resource == "cronjobs" {
			spec = spec["jobTemplate"].(map[string]any)["spec"].(map[string]any)
		}
		if resource != "pods" {
			spec = spec["template"].(map[string]any)["spec"].(map[string]any)
		}
		if resource != "jobs" {
			spec["affinity"] = map[string]any{"nodeAffinity": map[string]any{}}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(obj)
	}))
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	err = WaitForGuardrails(context.Background(), c, gpuOnly(t, "[gpu]"), 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "berth-class-jobs") || !strings.Contains(err.Error(), "a Job of class inference in team-a came back without the class's placement") {
		t.Errorf("error %v; want the Jobs' policy berth-class-jobs not in force", err)
	}
}

// Every team namespace is probed, not the first that answers: a team
// added by apply is refused by the policies' old version (which name the
// team namespaces literally) until the API server compiles the new one,
// while the first team's probes already pass. A probe refused only by
// its team's quota has passed the policies, and counts as neither.
func TestWaitForGuardrailsProbesEveryNamespace(t *testing.T) {
	for _, c := range []struct {
		name    string
		refuse  map[string]string // namespace: the refusal its probes get
		wantErr string            // "" when the wait passes
	}{
		{"the new team refused by the old policy", map[string]string{
			"team-b": `pods "probe" is forbidden: ValidatingAdmissionPolicy 'berth-workloads' with binding 'berth-workloads' denied request: berth/gpu-namespace: namespace team-b has no GPU quota`,
		}, "namespace team-b has no GPU quota"},
		{"a team whose quota is in use", map[string]string{
			"team-a": `pods "probe" is forbidden: exceeded quota: team-a, requested: nvidia.com/gpu=1, used: nvidia.com/gpu=1, limited: nvidia.com/gpu=1`,
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				parts := strings.Split(r.URL.Path, "/")
				ns := ""
				for i, p := range parts[:len(parts)-1] {
					if p == "namespaces" {
						ns = parts[i+1]
					}
				}
				w.Header().Set("Content-Type", "application/json")
				if msg, ok := c.refuse[ns]; ok {
					w.WriteHeader(http.StatusForbidden)
					json.NewEncoder(w).Encode(&metav1.Status{
						TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
						Status:   metav1.StatusFailure, Message: msg, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden,
					})
					return
				}
				var obj map[string]any
				if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				spec := obj["spec"].(map[string]any)
				switch path.Base(r.URL.Path) {
				case "pods":
				case "cronjobs":
					spec = spec["jobTemplate"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				default:
					spec = spec["template"].(map[string]any)["spec"].(map[string]any)
				}
				spec["affinity"] = map[string]any{"nodeAffinity": map[string]any{}}
				w.WriteHeader(http.StatusCreated)
				json.NewEncoder(w).Encode(obj)
			}))
			defer srv.Close()
			cl, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
			if err != nil {
				t.Fatal(err)
			}
			// Inference on both pools: its probe pods are in team-a and
			// team-b; training's, asking a GPU, in team-a only.
			bp := gpuOnly(t, "[cpu, gpu]")
			bp.Spec.Guardrails = v1alpha1.GuardrailsWarn // no namespace probe
			err = WaitForGuardrails(context.Background(), cl, bp, 300*time.Millisecond)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("wait: %v; want passed", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("wait: %v; want an error with %q", err, c.wantErr)
			}
		})
	}
}
