package why

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Summary is every Pending pod and every workload that cannot create
// its pods, each explained.
type Summary struct {
	Pods      []Verdict `json:"pods"`
	Workloads []Verdict `json:"workloads"`
}

// ExplainAll explains the Pending pods of namespace ("" for all) and the
// workloads whose controllers fail to create pods.
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
		if v.Top.Code == CauseQuotaExceeded || v.Top.Code == CauseCreateFailed {
			out.Workloads = append(out.Workloads, v)
		}
	}
	return out
}
