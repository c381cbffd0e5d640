package dash

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	policylisters "k8s.io/client-go/listers/policy/v1"

	"berth.io/berth/internal/status"
)

// historyWindow is how far back the Workloads page draws each HPA, and
// sampleEvery how far apart its samples are at least: a reading closer
// to the last sample than that replaces it.
const (
	historyWindow = time.Hour
	sampleEvery   = 15 * time.Second
)

// Workloads is the Workloads page, and its JSON.
type Workloads struct {
	HPAs    []HPARow    `json:"hpas"`
	Budgets []BudgetRow `json:"budgets"`
}

// HPARow is one HPA: now, and its samples over the last hour.
type HPARow struct {
	Namespace string `json:"namespace"`
	HPA       string `json:"hpa"`
	Target    string `json:"target"`
	Current   int32  `json:"current"`
	Desired   int32  `json:"desired"`
	Min       int32  `json:"min"`
	Max       int32  `json:"max"`
	// Metric is the first metric's name and Goal its target.
	Metric  string   `json:"metric,omitempty"`
	Goal    float64  `json:"goal,omitempty"`
	Samples []Sample `json:"samples"`
}

// Sample is an HPA as one reading saw it.
type Sample struct {
	Time     time.Time `json:"time"`
	Replicas int32     `json:"replicas"`
	// Metric is the first metric's current value; Known false when the
	// controller published none.
	Metric float64 `json:"metric"`
	Known  bool    `json:"known"`
}

// BudgetRow is a PodDisruptionBudget: a service's healthy pods against
// what its budget keeps.
type BudgetRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Healthy   int32  `json:"healthy"`
	Desired   int32  `json:"desired"`
	Expected  int32  `json:"expected"`
	// Allowed is how many pods may be disrupted now.
	Allowed int32 `json:"allowed"`
}

// history keeps each HPA's samples for historyWindow. It is used by the
// server's reading loop alone.
type history map[string][]Sample

// add records the readings of now and drops what is older than the window.
func (h history) add(now time.Time, scaled []status.Scaled) {
	seen := map[string]bool{}
	for _, s := range scaled {
		key := s.Namespace + "/" + s.HPA
		seen[key] = true
		sm := Sample{Time: now, Replicas: s.Current}
		if len(s.Metrics) > 0 {
			sm.Metric, sm.Known = s.Metrics[0].Current, s.Metrics[0].Known
		}
		list := h[key]
		if n := len(list); n > 0 && now.Sub(list[n-1].Time) < sampleEvery {
			list = list[:n-1]
		}
		list = append(list, sm)
		for len(list) > 0 && now.Sub(list[0].Time) > historyWindow {
			list = list[1:]
		}
		h[key] = list
	}
	for key := range h {
		if !seen[key] {
			delete(h, key)
		}
	}
}

func workloads(v *View, h history, pdbs policylisters.PodDisruptionBudgetLister) Workloads {
	out := Workloads{HPAs: []HPARow{}, Budgets: []BudgetRow{}}
	for _, s := range v.Status.Scaled {
		row := HPARow{Namespace: s.Namespace, HPA: s.HPA, Target: s.Target, Current: s.Current, Desired: s.Desired, Min: s.Min, Max: s.Max,
			Samples: append([]Sample{}, h[s.Namespace+"/"+s.HPA]...)}
		if len(s.Metrics) > 0 {
			row.Metric, row.Goal = s.Metrics[0].Name, s.Metrics[0].Target
		}
		out.HPAs = append(out.HPAs, row)
	}
	if pdbs != nil {
		list, _ := pdbs.List(labels.Everything())
		for _, p := range list {
			out.Budgets = append(out.Budgets, BudgetRow{Namespace: p.Namespace, Name: p.Name, Healthy: p.Status.CurrentHealthy,
				Desired: p.Status.DesiredHealthy, Expected: p.Status.ExpectedPods, Allowed: p.Status.DisruptionsAllowed})
		}
		sort.Slice(out.Budgets, func(i, j int) bool {
			if out.Budgets[i].Namespace != out.Budgets[j].Namespace {
				return out.Budgets[i].Namespace < out.Budgets[j].Namespace
			}
			return out.Budgets[i].Name < out.Budgets[j].Name
		})
	}
	return out
}
