package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDiff(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": "team-quota", "namespace": "team-a", "resourceVersion": "7", "uid": "x",
			"labels": map[string]any{"berth.io/blueprint": "retail", "old": "yes"}},
		"spec":   map[string]any{"hard": map[string]any{"requests.nvidia.com/gpu": "4", "requests.cpu": "64"}},
		"status": map[string]any{"used": map[string]any{"requests.cpu": "1"}},
	}}
	next := live.DeepCopy()
	unstructured.SetNestedField(next.Object, "6", "spec", "hard", "requests.nvidia.com/gpu")
	unstructured.SetNestedField(next.Object, "8", "metadata", "resourceVersion")
	unstructured.RemoveNestedField(next.Object, "metadata", "labels", "old")
	unstructured.SetNestedField(next.Object, int64(3), "spec", "replicas")
	unstructured.SetNestedSlice(next.Object, []any{}, "spec", "scopes")

	want := []FieldChange{
		{Path: `metadata.labels.old`, From: "yes"},
		{Path: `spec.hard["requests.nvidia.com/gpu"]`, From: "4", To: "6"},
		{Path: `spec.replicas`, To: "3"},
		{Path: `spec.scopes`, To: "[]"},
	}
	if d := cmp.Diff(want, diff(live, next)); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}
	if got := diff(live, live.DeepCopy()); len(got) != 0 {
		t.Errorf("diff of an object with itself = %v, want nothing", got)
	}
}

func TestFieldsOfACreateLeaveOutIdentity(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
		"metadata": map[string]any{"name": "inference-high", "creationTimestamp": nil},
		"value":    int64(100000),
	}}
	want := []FieldChange{{Path: "value", To: "100000"}}
	if d := cmp.Diff(want, fields(obj)); d != "" {
		t.Errorf("fields (-want +got):\n%s", d)
	}
}
