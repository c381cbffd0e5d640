package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/recorded"
)

// recordChanges lists what differs between bp and the blueprint a local
// cluster has recorded (recorded.Write), which its controllers (the
// node autoscaler) act on: each changed autoscaler setting and pool bound
// as "field: old → new", or one line for a new record. The other fields
// of the blueprint reach the cluster as objects, and are planned as such.
func recordChanges(ctx context.Context, c kubernetes.Interface, bp *v1alpha1.Blueprint) ([]string, error) {
	name := recorded.ConfigMapName(bp.Metadata.Name)
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return []string{"record the blueprint for the local cluster's autoscaler"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading kube-system/%s: %w", name, err)
	}
	old, err := recorded.Decode(cm)
	if err != nil {
		return []string{"rewrite the unreadable record: " + err.Error()}, nil
	}
	var out []string
	out = append(out, diffJSON("spec.autoscaler", old.Spec.Autoscaler, bp.Spec.Autoscaler)...)
	out = append(out, diffJSON("spec.devicePlugin", old.Spec.DevicePlugin, bp.Spec.DevicePlugin)...)
	was := map[string]*v1alpha1.Autoscale{}
	for i := range old.Spec.Pools {
		was[old.Spec.Pools[i].Name] = old.Spec.Pools[i].Autoscale
	}
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		if prev, ok := was[p.Name]; ok {
			out = append(out, diffJSON("pool "+p.Name+" autoscale", prev, p.Autoscale)...)
		}
	}
	if len(out) == 0 {
		a, _ := json.Marshal(old)
		b, _ := json.Marshal(bp)
		if string(a) != string(b) {
			out = append(out, "update the recorded blueprint")
		}
	}
	return out, nil
}

// diffJSON compares two values field by field, one level deep, as
// "path.field: old → new".
func diffJSON(path string, a, b any) []string {
	flat := func(v any) map[string]string {
		out := map[string]string{}
		raw, _ := json.Marshal(v)
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return out
		}
		for k, v := range m {
			out[k] = string(v)
		}
		return out
	}
	fa, fb := flat(a), flat(b)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []string
	for _, k := range sorted {
		if fa[k] != fb[k] {
			out = append(out, fmt.Sprintf("%s.%s: %s → %s", path, k, orNone(fa[k]), orNone(fb[k])))
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
