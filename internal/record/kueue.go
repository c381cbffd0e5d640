package record

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// KueueGroup is the API group of Kueue's Workloads, and KueueVersions the
// versions read, newest first (Kueue 0.17 serves both).
const KueueGroup = "kueue.x-k8s.io"

var KueueVersions = []string{"v1beta2", "v1beta1"}

// workload is the part of a Kueue Workload a recording reads.
type workload struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// admissions are the Workloads' admissions by their Job's UID: when each
// was admitted (its Admitted condition, else QuotaReserved), zero while
// it waits.
func admissions(ws []unstructured.Unstructured) map[types.UID]queued {
	out := map[types.UID]queued{}
	for _, u := range ws {
		var w workload
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
			continue
		}
		var owner types.UID
		for _, ref := range w.OwnerReferences {
			if ref.Kind == "Job" {
				owner = ref.UID
			}
		}
		if owner == "" {
			continue
		}
		var at time.Time
		for _, c := range w.Status.Conditions {
			if c.Status != metav1.ConditionTrue {
				continue
			}
			switch c.Type {
			case "Admitted":
				at = c.LastTransitionTime.Time
			case "QuotaReserved":
				if at.IsZero() {
					at = c.LastTransitionTime.Time
				}
			}
		}
		out[owner] = queued{admitted: at}
	}
	return out
}
