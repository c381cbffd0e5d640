// Package metricsapi serves, inside `berth up`, the metrics APIs an HPA
// reads on any cluster: custom.metrics.k8s.io (requests_per_second and
// the DCGM exporter's DCGM_FI_DEV_GPU_UTIL per pod), external.metrics.k8s.io
// (a queue's depth, named as each broker's exporter names it) and
// metrics.k8s.io (CPU and memory per pod and node, as metrics-server). They
// are registered as APIServices behind the API server, the way a metrics
// adapter is, so `kubectl get --raw`, `kubectl top` and the real HPA
// controller read them like anywhere else.
//
// Simulated pods run no code, so the values come from a simulated load the
// user sets with `berth load`: kept in the cluster in the ConfigMap
// kube-system/berth-load, read by the server on every request. A queue
// given an item time drains as its workers run: the QueueController takes
// its items off as the Ready pods of the workloads scaled on it work.
package metricsapi

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// The ConfigMap the load lives in, and its key.
const (
	LoadNamespace = metav1.NamespaceSystem
	LoadConfigMap = "berth-load"
	loadKey       = "load.yaml"
)

// Load is the simulated load on the cluster: per workload, per queue, and
// a profile being played.
type Load struct {
	// Workloads are the loads set per workload.
	Workloads []WorkloadLoad `json:"workloads,omitempty"`
	// Queues maps a queue's name to its depth in messages (Kafka: lag).
	Queues map[string]int64 `json:"queues,omitempty"`
	// ItemTimes maps a queue's name to how long one worker takes over one
	// of its items; under a playback, in the profile's time. A queue
	// without one never drains: its depth stays until it is set again.
	ItemTimes map[string]metav1.Duration `json:"itemTimes,omitempty"`
	// Playback is the profile being played, if any. Its steps override
	// the loads above from the moment each step is reached.
	Playback *Playback `json:"playback,omitempty"`
}

// WorkloadLoad is the load on one workload's pods, in totals that stay
// constant as replicas come and go: the same traffic spread over more
// Ready pods shows less on each. A nil field leaves that metric as it was
// (zero if never set).
type WorkloadLoad struct {
	Namespace string `json:"namespace"`
	// Kind is Deployment or StatefulSet.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// RPS is requests per second to the whole workload.
	RPS *float64 `json:"rps,omitempty"`
	// GPUWork is the GPU work in percent of one GPU, summed over the
	// pods: 270 is 90% on each of 3 pods, or 54% on each of 5.
	GPUWork *float64 `json:"gpuWork,omitempty"`
	// CPUWork is the CPU work in percent of one pod's CPU request, summed
	// over the pods.
	CPUWork *float64 `json:"cpuWork,omitempty"`
}

// Key names the workload, as NAMESPACE/Kind/NAME.
func (w WorkloadLoad) Key() string { return w.Namespace + "/" + w.Kind + "/" + w.Name }

// Profile is a load profile file: steps in time, each setting loads from
// its moment on, to replay a day of traffic.
type Profile struct {
	// Steps, in order of At.
	Steps []Step `json:"steps"`
	// Queues give the items of queues a processing time from the moment
	// the profile is played, as `berth load queue --item-time` does, so
	// that each drains as its workers run. A queue not listed keeps the
	// item time it had (none: it never drains).
	Queues []QueueItems `json:"queues,omitempty"`
}

// QueueItems is how long one worker takes over one item of a queue.
type QueueItems struct {
	Name string `json:"name"`
	// ItemTime is in the profile's time: at speed 60, a 30s item takes a
	// worker half a second.
	ItemTime metav1.Duration `json:"itemTime"`
}

// Step sets loads at a moment of the profile.
type Step struct {
	// At is the step's time from the start of the profile.
	At metav1.Duration `json:"at"`
	// Workloads are the loads the step sets; fields left out keep their
	// values.
	Workloads []WorkloadLoad `json:"workloads,omitempty"`
	// Queues are the depths the step sets: a step sets a queue's depth
	// (the items waiting when it is reached), it does not add to it, as
	// `berth load queue --depth` sets it; from there the queue drains if
	// it has an item time.
	Queues map[string]int64 `json:"queues,omitempty"`
}

// Playback is a profile being played.
type Playback struct {
	Profile Profile     `json:"profile"`
	Started metav1.Time `json:"started"`
	// Speed is how many seconds of the profile pass per second: 60 plays
	// an hour in a minute.
	Speed float64 `json:"speed"`
	// Folded is how many of the profile's first steps have their queue
	// depths in Load.Queues already: the QueueController folds in the
	// steps it has drained past, so that their depths are not set again.
	// Zero: none.
	Folded int `json:"folded,omitempty"`
}

// Elapsed is how far into the profile the playback is at now.
func (p *Playback) Elapsed(now time.Time) time.Duration {
	return time.Duration(float64(now.Sub(p.Started.Time)) * p.Speed)
}

// reached is how many of the profile's steps the playback has reached at
// now.
func (p *Playback) reached(now time.Time) int {
	elapsed := p.Elapsed(now)
	n := 0
	for n < len(p.Profile.Steps) && p.Profile.Steps[n].At.Duration <= elapsed {
		n++
	}
	return n
}

// Length is the time of the profile's last step.
func (p *Profile) Length() time.Duration {
	if len(p.Steps) == 0 {
		return 0
	}
	return p.Steps[len(p.Steps)-1].At.Duration
}

// ParseProfile reads a profile file, checking that its steps are in order
// and name their workloads. Its error is a *problem.Problem, with the
// field at fault where there is one; the caller names the file.
func ParseProfile(data []byte) (*Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, problem.Errorf("a profile is `steps:`, each with `at:` (a duration such as 90s or 2h), and `workloads:` (namespace, kind, name, rps, gpuWork, cpuWork) and/or `queues:` (NAME: depth); beside the steps, `queues:` may give items a processing time ({name: NAME, itemTime: 30s})", "not a load profile: %w", err)
	}
	if err := CheckProfile(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

// CheckProfile checks a profile decoded elsewhere (a rehearsal's trace
// holds one) as ParseProfile checks a profile file, filling in each
// workload's kind (Deployment when left out). Its error is a
// *problem.Problem whose field is a path within the profile.
func CheckProfile(p *Profile) error {
	if len(p.Steps) == 0 {
		return problem.New("add `steps:`, each with `at:` and the loads it sets", "the profile has no steps")
	}
	for i, s := range p.Steps {
		if i > 0 && s.At.Duration < p.Steps[i-1].At.Duration {
			return &problem.Problem{Field: fmt.Sprintf("steps[%d].at", i), Message: fmt.Sprintf("%s comes before the step above it (%s)", s.At.Duration, p.Steps[i-1].At.Duration), Fix: "list the steps in time order"}
		}
		for j := range s.Workloads {
			w := &p.Steps[i].Workloads[j]
			if w.Kind == "" {
				w.Kind = "Deployment"
			}
			if w.Namespace == "" || w.Name == "" {
				return &problem.Problem{Field: fmt.Sprintf("steps[%d].workloads[%d]", i, j), Message: "namespace and name are required", Fix: "name the workload, e.g. {namespace: team-a, name: recommender, rps: 40}"}
			}
			if w.Kind != "Deployment" && w.Kind != "StatefulSet" {
				return &problem.Problem{Field: fmt.Sprintf("steps[%d].workloads[%d].kind", i, j), Message: fmt.Sprintf("%q is not Deployment or StatefulSet", w.Kind), Fix: "write one of them, or leave kind out for Deployment"}
			}
			for _, f := range []struct {
				name string
				v    *float64
			}{{"rps", w.RPS}, {"gpuWork", w.GPUWork}, {"cpuWork", w.CPUWork}} {
				if f.v != nil && *f.v < 0 {
					return &problem.Problem{Field: fmt.Sprintf("steps[%d].workloads[%d].%s", i, j, f.name), Message: fmt.Sprintf("%g: a load may not be negative", *f.v)}
				}
			}
		}
		for q, d := range s.Queues {
			if d < 0 {
				return &problem.Problem{Field: fmt.Sprintf("steps[%d].queues.%s", i, q), Message: "a depth may not be negative"}
			}
		}
	}
	seen := map[string]bool{}
	for i, q := range p.Queues {
		switch {
		case q.Name == "":
			return &problem.Problem{Field: fmt.Sprintf("queues[%d].name", i), Message: "a queue's name is required", Fix: "name the queue as the steps' queues: do, e.g. {name: images, itemTime: 30s}"}
		case seen[q.Name]:
			return &problem.Problem{Field: fmt.Sprintf("queues[%d].name", i), Message: fmt.Sprintf("queue %s is listed twice", q.Name), Fix: "keep one of them"}
		case q.ItemTime.Duration <= 0:
			return &problem.Problem{Field: fmt.Sprintf("queues[%d].itemTime", i), Message: "an item's processing time must be more than zero", Fix: "write how long one worker takes over one item, like 30s; leave the queue out for one that never drains"}
		}
		seen[q.Name] = true
	}
	return nil
}

// Set merges w into the load: the fields w sets replace the workload's.
func (l *Load) Set(w WorkloadLoad) {
	for i := range l.Workloads {
		if l.Workloads[i].Key() == w.Key() {
			merge(&l.Workloads[i], w)
			return
		}
	}
	l.Workloads = append(l.Workloads, w)
	sort.Slice(l.Workloads, func(i, j int) bool { return l.Workloads[i].Key() < l.Workloads[j].Key() })
}

func merge(into *WorkloadLoad, w WorkloadLoad) {
	if w.RPS != nil {
		into.RPS = w.RPS
	}
	if w.GPUWork != nil {
		into.GPUWork = w.GPUWork
	}
	if w.CPUWork != nil {
		into.CPUWork = w.CPUWork
	}
}

// SetQueue sets a queue's depth.
func (l *Load) SetQueue(name string, depth int64) {
	if l.Queues == nil {
		l.Queues = map[string]int64{}
	}
	l.Queues[name] = depth
}

// SetItemTime sets how long one worker takes over one of a queue's
// items; zero (or less) takes it away, and the queue no longer drains.
func (l *Load) SetItemTime(name string, d time.Duration) {
	if d <= 0 {
		delete(l.ItemTimes, name)
		return
	}
	if l.ItemTimes == nil {
		l.ItemTimes = map[string]metav1.Duration{}
	}
	l.ItemTimes[name] = metav1.Duration{Duration: d}
}

// Play starts playing p from started at speed, in place of any profile
// playing: its steps set their loads as each is reached, and its queues'
// item times are set now.
func (l *Load) Play(p *Profile, started time.Time, speed float64) {
	l.Playback = &Playback{Profile: *p, Started: metav1.NewTime(started), Speed: speed}
	for _, q := range p.Queues {
		l.SetItemTime(q.Name, q.ItemTime.Duration)
	}
}

// At is the load in effect at now: the loads set, overridden by every
// step of the playing profile reached by now (of the steps the
// QueueController has folded into the queues, only the loads).
func (l *Load) At(now time.Time) *Load {
	out := &Load{Queues: map[string]int64{}}
	for _, w := range l.Workloads {
		out.Set(w)
	}
	for q, d := range l.Queues {
		out.Queues[q] = d
	}
	for q, d := range l.ItemTimes {
		out.SetItemTime(q, d.Duration)
	}
	if p := l.Playback; p != nil {
		elapsed := p.Elapsed(now)
		for i, s := range p.Profile.Steps {
			if s.At.Duration > elapsed {
				break
			}
			for _, w := range s.Workloads {
				out.Set(w)
			}
			if i < p.Folded {
				continue
			}
			for q, d := range s.Queues {
				out.Queues[q] = d
			}
		}
	}
	return out
}

// Workload is the load on the named workload, zero if none is set.
func (l *Load) Workload(namespace, kind, name string) WorkloadLoad {
	key := WorkloadLoad{Namespace: namespace, Kind: kind, Name: name}.Key()
	for _, w := range l.Workloads {
		if w.Key() == key {
			return w
		}
	}
	return WorkloadLoad{Namespace: namespace, Kind: kind, Name: name}
}

// DecodeLoad reads the load from its ConfigMap; a missing ConfigMap is no
// load.
func DecodeLoad(cm *corev1.ConfigMap) (*Load, error) {
	l := &Load{}
	if cm == nil || cm.Data[loadKey] == "" {
		return l, nil
	}
	if err := yaml.Unmarshal([]byte(cm.Data[loadKey]), l); err != nil {
		return nil, problem.Errorf("`berth load clear` starts again from no load", "%s/%s: key %s is not a load: %w", LoadNamespace, LoadConfigMap, loadKey, err)
	}
	return l, nil
}

// ReadLoad reads the cluster's load.
func ReadLoad(ctx context.Context, client kubernetes.Interface) (*Load, error) {
	cm, err := client.CoreV1().ConfigMaps(LoadNamespace).Get(ctx, LoadConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Load{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the load (%s/%s): %w", LoadNamespace, LoadConfigMap, err)
	}
	return DecodeLoad(cm)
}

// UpdateLoad changes the cluster's load with change, retrying when
// another writer got there first, and returns the load written.
func UpdateLoad(ctx context.Context, client kubernetes.Interface, change func(*Load) error) (*Load, error) {
	var out *Load
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cms := client.CoreV1().ConfigMaps(LoadNamespace)
		cm, err := cms.Get(ctx, LoadConfigMap, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return fmt.Errorf("reading the load (%s/%s): %w", LoadNamespace, LoadConfigMap, err)
		}
		if create {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: LoadConfigMap, Namespace: LoadNamespace,
				Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy},
			}}
		}
		l, err := DecodeLoad(cm)
		if err != nil {
			return err
		}
		if err := change(l); err != nil {
			return err
		}
		data, err := yaml.Marshal(l)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[loadKey] = string(data)
		if create {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		} else {
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		out = l
		return err
	})
	return out, err
}
