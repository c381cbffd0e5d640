package metricsapi

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"berth.io/berth/internal/problem"
)

func TestParseProfile(t *testing.T) {
	data := []byte(`
steps:
- at: 0s
  workloads:
  - {namespace: shop, name: web, rps: 10}
  queues: {orders: 5}
- at: 1h
  workloads:
  - {namespace: shop, kind: StatefulSet, name: db, cpuWork: 50}
queues:
- {name: orders, itemTime: 30s}
`)
	got, err := ParseProfile(data)
	if err != nil {
		t.Fatalf("ParseProfile: %v", err)
	}
	want := &Profile{Steps: []Step{
		{
			At:        metav1.Duration{},
			Workloads: []WorkloadLoad{{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(10.0)}},
			Queues:    map[string]int64{"orders": 5},
		},
		{
			At:        metav1.Duration{Duration: time.Hour},
			Workloads: []WorkloadLoad{{Namespace: "shop", Kind: "StatefulSet", Name: "db", CPUWork: ptr.To(50.0)}},
		},
	}, Queues: []QueueItems{{Name: "orders", ItemTime: metav1.Duration{Duration: 30 * time.Second}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseProfile (-want +got):\n%s", diff)
	}
	if got.Length() != time.Hour {
		t.Errorf("Length = %s, want 1h", got.Length())
	}
}

func TestParseProfileErrors(t *testing.T) {
	tests := []struct {
		name, data string
		// want are the parts the error must name.
		want []string
	}{
		{"not yaml", "steps: [", []string{"not a load profile", "fix:"}},
		{"unknown field", "steps:\n- at: 1s\n  workload: []\n", []string{"not a load profile", "workload"}},
		{"no steps", "steps: []\n", []string{"no steps"}},
		{
			"out of order",
			"steps:\n- at: 2m\n- at: 3m\n- at: 1m\n",
			[]string{"steps[2].at", "1m0s", "3m0s", "time order"},
		},
		{
			"missing name",
			"steps:\n- at: 1s\n  workloads:\n  - {namespace: shop, rps: 1}\n",
			[]string{"steps[0].workloads[0]", "name"},
		},
		{
			"missing namespace",
			"steps:\n- at: 1s\n- at: 2s\n  workloads:\n  - {name: web, rps: 1}\n  - {namespace: shop, rps: 1}\n",
			[]string{"steps[1].workloads[0]", "namespace"},
		},
		{
			"bad kind",
			"steps:\n- at: 1s\n  workloads:\n  - {namespace: shop, name: web}\n  - {namespace: shop, kind: DaemonSet, name: agent}\n",
			[]string{"steps[0].workloads[1].kind", `"DaemonSet"`},
		},
		{
			"negative rps",
			"steps:\n- at: 1s\n  workloads:\n  - {namespace: shop, name: web, rps: -1}\n",
			[]string{"steps[0].workloads[0].rps", "negative"},
		},
		{
			"negative gpuWork",
			"steps:\n- at: 1s\n  workloads:\n  - {namespace: shop, name: web, rps: 1, gpuWork: -5}\n",
			[]string{"steps[0].workloads[0].gpuWork", "negative"},
		},
		{
			"negative cpuWork",
			"steps:\n- at: 1s\n- at: 1s\n  workloads:\n  - {namespace: shop, name: web, cpuWork: -0.5}\n",
			[]string{"steps[1].workloads[0].cpuWork", "negative"},
		},
		{
			"negative depth",
			"steps:\n- at: 1s\n  queues: {orders: -3}\n",
			[]string{"steps[0].queues.orders", "negative"},
		},
		{
			"queue without a name",
			"steps:\n- at: 1s\nqueues:\n- {itemTime: 30s}\n",
			[]string{"queues[0].name", "required"},
		},
		{
			"queue listed twice",
			"steps:\n- at: 1s\nqueues:\n- {name: q, itemTime: 30s}\n- {name: q, itemTime: 1s}\n",
			[]string{"queues[1].name", "twice"},
		},
		{
			"queue without an item time",
			"steps:\n- at: 1s\nqueues:\n- {name: q}\n",
			[]string{"queues[0].itemTime", "more than zero"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseProfile([]byte(tt.data))
			if err == nil {
				t.Fatalf("ParseProfile = %+v, want an error", p)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestLoadSet(t *testing.T) {
	var l Load
	l.Set(WorkloadLoad{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(10.0), GPUWork: ptr.To(80.0)})
	l.Set(WorkloadLoad{Namespace: "shop", Kind: "Deployment", Name: "api", CPUWork: ptr.To(30.0)})
	l.Set(WorkloadLoad{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(25.0)})

	want := []WorkloadLoad{
		{Namespace: "shop", Kind: "Deployment", Name: "api", CPUWork: ptr.To(30.0)},
		{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(25.0), GPUWork: ptr.To(80.0)},
	}
	if diff := cmp.Diff(want, l.Workloads); diff != "" {
		t.Errorf("Workloads after Set (-want +got):\n%s", diff)
	}
	if got := l.Workload("shop", "Deployment", "web"); got.GPUWork == nil || *got.GPUWork != 80 {
		t.Errorf("Workload(web).GPUWork = %v, want 80 kept from the first Set", got.GPUWork)
	}
	// A StatefulSet of the same name is another workload.
	if got := l.Workload("shop", "StatefulSet", "web"); got.RPS != nil || got.GPUWork != nil || got.CPUWork != nil {
		t.Errorf("Workload(StatefulSet web) = %+v, want no load", got)
	}
}

func TestLoadAt(t *testing.T) {
	started := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	web := func(rps float64) WorkloadLoad {
		return WorkloadLoad{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(rps)}
	}
	l := &Load{
		Workloads: []WorkloadLoad{{Namespace: "shop", Kind: "Deployment", Name: "web", RPS: ptr.To(1.0), GPUWork: ptr.To(50.0)}},
		Queues:    map[string]int64{"orders": 7, "returns": 2},
		Playback: &Playback{
			Started: metav1.NewTime(started),
			Speed:   60, // an hour of the profile per minute
			Profile: Profile{Steps: []Step{
				{At: metav1.Duration{Duration: time.Hour}, Workloads: []WorkloadLoad{web(10)}, Queues: map[string]int64{"orders": 100}},
				{At: metav1.Duration{Duration: 3 * time.Hour}, Workloads: []WorkloadLoad{web(40)}},
			}},
		},
	}
	tests := []struct {
		name    string
		at      time.Duration // wall time since the playback started
		rps     float64
		queues  map[string]int64
		elapsed time.Duration
	}{
		{"before the playback", -time.Minute, 1, map[string]int64{"orders": 7, "returns": 2}, -time.Hour},
		{"before the first step", 59 * time.Second, 1, map[string]int64{"orders": 7, "returns": 2}, 59 * time.Minute},
		{"at the first step", time.Minute, 10, map[string]int64{"orders": 100, "returns": 2}, time.Hour},
		{"between the steps", 2 * time.Minute, 10, map[string]int64{"orders": 100, "returns": 2}, 2 * time.Hour},
		{"after the last step", 10 * time.Minute, 40, map[string]int64{"orders": 100, "returns": 2}, 10 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := started.Add(tt.at)
			if got := l.Playback.Elapsed(now); got != tt.elapsed {
				t.Errorf("Elapsed = %s, want %s", got, tt.elapsed)
			}
			got := l.At(now)
			w := got.Workload("shop", "Deployment", "web")
			if w.RPS == nil || *w.RPS != tt.rps {
				t.Errorf("rps = %v, want %g", w.RPS, tt.rps)
			}
			if w.GPUWork == nil || *w.GPUWork != 50 {
				t.Errorf("gpuWork = %v, want 50: a step that sets only rps keeps it", w.GPUWork)
			}
			if diff := cmp.Diff(tt.queues, got.Queues); diff != "" {
				t.Errorf("queues (-want +got):\n%s", diff)
			}
			if got.Playback != nil {
				t.Errorf("At kept the playback; the load in effect has none")
			}
		})
	}
	// At reads the load; it must not change it.
	if *l.Workloads[0].RPS != 1 || l.Queues["orders"] != 7 {
		t.Errorf("At changed the load it read: %+v", l)
	}
}

func TestDecodeLoad(t *testing.T) {
	for _, cm := range []*corev1.ConfigMap{nil, {}, {Data: map[string]string{"other": "x"}}} {
		l, err := DecodeLoad(cm)
		if err != nil || l == nil || len(l.Workloads) != 0 || len(l.Queues) != 0 {
			t.Errorf("DecodeLoad(%v) = %+v, %v; want no load", cm, l, err)
		}
	}

	cm := &corev1.ConfigMap{Data: map[string]string{loadKey: "queues: {orders: 12}\n"}}
	l, err := DecodeLoad(cm)
	if err != nil {
		t.Fatalf("DecodeLoad: %v", err)
	}
	if l.Queues["orders"] != 12 {
		t.Errorf("queues = %v, want orders: 12", l.Queues)
	}

	cm = &corev1.ConfigMap{Data: map[string]string{loadKey: "workloads: {this is: [not a load"}}
	if _, err := DecodeLoad(cm); err == nil {
		t.Fatal("DecodeLoad of garbage gave no error")
	} else {
		for _, w := range []string{"kube-system/berth-load", loadKey, "berth load clear"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
	}
}

// A profile's problems name the field at fault as Field, so that the
// CLI, which knows the file, renders them as FILE: FIELD: message.
func TestParseProfileErrorsNameTheField(t *testing.T) {
	_, err := ParseProfile([]byte("steps:\n- at: 2m\n- at: 1m\n"))
	p, ok := problem.As(err)
	if !ok {
		t.Fatalf("ParseProfile error %v is not a problem", err)
	}
	if p.Field != "steps[1].at" {
		t.Errorf("problem %q has field %q, want steps[1].at", p, p.Field)
	}
	p.File = "load.yaml"
	if want := "load.yaml: steps[1].at: 1m0s comes before the step above it (2m0s)\n    fix: list the steps in time order"; p.String() != want {
		t.Errorf("problem = %q, want %q", p, want)
	}
}
