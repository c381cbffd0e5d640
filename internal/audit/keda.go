package audit

import (
	"cmp"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scaledObjects is KEDA's ScaledObject resource, listed where it is served.
var scaledObjects = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

// KEDA's defaults for what a ScaledObject leaves unset.
const (
	kedaMinReplicas = 0
	kedaCooldown    = 300
)

// ScaledObject is what audit reads of a KEDA ScaledObject
// (keda.sh/v1alpha1): what it scales, how low, and how slowly. Audit
// decodes it into this struct rather than import KEDA's module.
type ScaledObject struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			// Kind empty means Deployment.
			Kind string `json:"kind,omitempty"`
			Name string `json:"name"`
		} `json:"scaleTargetRef"`
		// MinReplicaCount nil means 0: KEDA scales to zero.
		MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
		// CooldownPeriod nil means 300 s: how long every trigger stays
		// inactive before the last replica goes.
		CooldownPeriod *int32 `json:"cooldownPeriod,omitempty"`
		Advanced       *struct {
			HorizontalPodAutoscalerConfig *struct {
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
		} `json:"advanced,omitempty"`
	} `json:"spec"`
}

// targetKind is the kind the ScaledObject scales.
func (so *ScaledObject) targetKind() string {
	return cmp.Or(so.Spec.ScaleTargetRef.Kind, "Deployment")
}

// minReplicas is the fewest replicas KEDA keeps.
func (so *ScaledObject) minReplicas() int32 {
	if m := so.Spec.MinReplicaCount; m != nil {
		return *m
	}
	return kedaMinReplicas
}

// scaleDownWindows are the delays a ScaledObject sets before replicas go,
// each with its field: its cooldownPeriod, which holds the last replica
// (and so its node) until the queue has been idle that long, and, when
// set, the stabilization window of the HPA KEDA makes, which holds the
// replicas above one. Unset, that HPA window is the HPA default of 300 s
// and is not counted: the blueprint's scaleDownWindow is, for a queue
// class, the ScaledObject's cooldownPeriod.
func (so *ScaledObject) scaleDownWindows() []window {
	cooldown := int32(kedaCooldown)
	if c := so.Spec.CooldownPeriod; c != nil {
		cooldown = *c
	}
	out := []window{{"spec.cooldownPeriod", cooldown, so.Spec.CooldownPeriod == nil}}
	if a := so.Spec.Advanced; a != nil && a.HorizontalPodAutoscalerConfig != nil {
		if b := a.HorizontalPodAutoscalerConfig.Behavior; b != nil && b.ScaleDown != nil && b.ScaleDown.StabilizationWindowSeconds != nil {
			out = append(out, window{"spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds", *b.ScaleDown.StabilizationWindowSeconds, false})
		}
	}
	return out
}

// window is a scale-down delay in seconds and the field that sets it;
// unset when the field is absent and seconds is its default.
type window struct {
	field   string
	seconds int32
	unset   bool
}

// ownedByKEDA reports whether KEDA made the HPA for a ScaledObject: the
// ScaledObject is then what to check and to fix, not its HPA.
func ownedByKEDA(h *autoscalingv2.HorizontalPodAutoscaler) bool {
	for _, ref := range h.OwnerReferences {
		if ref.Kind == "ScaledObject" {
			return true
		}
	}
	_, ok := h.Labels["scaledobject.keda.sh/name"]
	return ok
}
