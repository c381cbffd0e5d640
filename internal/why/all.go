package why

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Summary is every Pending pod, every workload that cannot create its
// pods, and every workload its HPA cannot scale or holds at its maximum
// while its metric asks for more, each explained.
type Summary struct {
	Pods      []Verdict `json:"pods"`
	Workloads []Verdict `json:"workloads"`
}

// ExplainAll explains the Pending pods of namespace ("" for all), the
// workloads whose controllers fail to create pods, the Jobs Kueue holds
// suspended in its queues, and the workloads whose HPAs
// are stuck (from the HPAs' status alone, without reading the workloads).
func ExplainAll(s *Snapshot, namespace string) Summary {
	out := Summary{Pods: []Verdict{}, Workloads: []Verdict{}}
	var pending []*corev1.Pod
	for i := range s.Pods {
		p := &s.Pods[i]
		if (namespace == "" || p.Namespace == namespace) && p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			pending = append(pending, p)
		}
	}
	sort.Slice(pending, func(i, j int) bool {
		if pending[i].Namespace != pending[j].Namespace {
			return pending[i].Namespace < pending[j].Namespace
		}
		return pending[i].Name < pending[j].Name
	})
	for _, p := range pending {
		out.Pods = append(out.Pods, Explain(s, p))
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if namespace != "" && w.Namespace != namespace {
			continue
		}
		v := ExplainWorkload(s, w)
		switch v.Top.Code {
		case CauseQuotaExceeded, CauseCreateFailed, CauseQueueWaiting, CauseQueuePreempted:
			out.Workloads = append(out.Workloads, v)
		}
	}
	for _, v := range s.stuckHPAs(namespace) {
		if !slices.ContainsFunc(out.Workloads, func(o Verdict) bool { return o.Workload == v.Workload }) {
			out.Workloads = append(out.Workloads, v)
		}
	}
	return out
}
