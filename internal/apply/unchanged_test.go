package apply

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// liveQuota is a quota as the API server holds it after berth applied it
// and kube-controller-manager wrote its status; edits replace parts of
// it.
const liveQuota = `
apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-quota
  namespace: team-a
  uid: 6c1e0a43-7a43-4bd4-9a64-0e2a4e1d2f10
  resourceVersion: "812"
  labels: {app.kubernetes.io/managed-by: berth, berth.io/blueprint: retail}
  managedFields:
  - manager: berth
    operation: Apply
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata: {f:labels: {f:app.kubernetes.io/managed-by: {}, f:berth.io/blueprint: {}}}
      f:spec: {f:hard: {f:requests.cpu: {}, f:requests.memory: {}}}
  - manager: kube-controller-manager
    operation: Update
    subresource: status
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:status: {f:hard: {.: {}, f:requests.cpu: {}, f:requests.memory: {}}, f:used: {.: {}, f:requests.cpu: {}, f:requests.memory: {}}}
spec:
  hard: {requests.cpu: "64", requests.memory: 256Gi}
status:
  hard: {requests.cpu: "64", requests.memory: 256Gi}
  used: {requests.cpu: "0", requests.memory: "0"}
`

// desiredQuota is the quota as compile makes it.
const desiredQuota = `
apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-quota
  namespace: team-a
  labels: {app.kubernetes.io/managed-by: berth, berth.io/blueprint: retail}
spec:
  hard: {requests.cpu: "64", requests.memory: 256Gi}
`

func TestUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name          string
		live, desired string
		want          bool
	}{
		{"berth's fields hold the desired values", liveQuota, desiredQuota, true},
		{"the blueprint changed a value", liveQuota,
			strings.Replace(desiredQuota, `requests.cpu: "64"`, `requests.cpu: "32"`, 1), false},
		{"the blueprint added a field", liveQuota,
			strings.Replace(desiredQuota, `requests.memory: 256Gi}`, `requests.memory: 256Gi, requests.nvidia.com/gpu: "4"}`, 1), false},
		{"the blueprint dropped a field", liveQuota,
			strings.Replace(desiredQuota, `, requests.memory: 256Gi}`, `}`, 1), false},
		// kubectl edit takes the field from berth: it is no longer berth's,
		// and applying again would conflict.
		{"another manager changed a field", strings.NewReplacer(
			`f:spec: {f:hard: {f:requests.cpu: {}, f:requests.memory: {}}}`, `f:spec: {f:hard: {f:requests.memory: {}}}`,
			`  - manager: kube-controller-manager`, "  - manager: kubectl-edit\n    operation: Update\n    apiVersion: v1\n    fieldsType: FieldsV1\n    fieldsV1:\n      f:spec: {f:hard: {f:requests.cpu: {}}}\n  - manager: kube-controller-manager",
			`hard: {requests.cpu: "64", requests.memory: 256Gi}
status`, `hard: {requests.cpu: "100", requests.memory: 256Gi}
status`).Replace(liveQuota), desiredQuota, false},
		// Only what berth applied counts; an object it wrote otherwise
		// is planned by dry run.
		{"berth's fields come from an update, not an apply", strings.Replace(liveQuota, "operation: Apply", "operation: Update", 1), desiredQuota, false},
		{"another object's fields", strings.Replace(liveQuota, "manager: berth", "manager: helm", 1), desiredQuota, false},
		{"a kind berth cannot extract", strings.Replace(liveQuota, "kind: ResourceQuota", "kind: ConfigMap", 1),
			strings.Replace(desiredQuota, "kind: ResourceQuota", "kind: ConfigMap", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unchanged(parse(t, tc.live), parse(t, tc.desired)); got != tc.want {
				t.Errorf("unchanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func parse(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
