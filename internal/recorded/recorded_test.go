package recorded

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
)

// record is the ConfigMap Write makes for a blueprint whose JSON is raw.
func record(name, rv, raw string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: ConfigMapName(name), Namespace: metav1.NamespaceSystem, ResourceVersion: rv,
			Labels: map[string]string{v1alpha1.LabelBlueprint: name},
		},
		Data: map[string]string{DataKey: raw},
	}
}

func blueprintJSON(name, plugin string) string {
	return `{"apiVersion":"berth.io/v1alpha1","kind":"Blueprint","metadata":{"name":"` + name + `"},"spec":{"devicePlugin":{"name":"` + plugin + `"}}}`
}

// storeOf is a Store over a plain cache, filled with objs: what its
// informer would hold.
func storeOf(t *testing.T, objs ...any) (*Store, cache.Store) {
	t.Helper()
	records := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, o := range objs {
		if err := records.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return &Store{records: records, decoded: map[string]*decoded{}}, records
}

func TestIsRecordIsOneTest(t *testing.T) {
	unlabelled := record("a", "1", "{}")
	unlabelled.Labels = nil
	misnamed := record("a", "1", "{}")
	misnamed.Name = ConfigMapPrefix + "b"
	elsewhere := record("a", "1", "{}")
	elsewhere.Namespace = "default"
	for _, tc := range []struct {
		name string
		cm   *corev1.ConfigMap
		want bool
	}{
		{"as Write makes it", record("a", "1", "{}"), true},
		{"no label", unlabelled, false},
		{"named for another blueprint", misnamed, false},
		{"outside kube-system", elsewhere, false},
	} {
		if got := IsRecord(tc.cm); got != tc.want {
			t.Errorf("%s: IsRecord = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A record is decoded once per resourceVersion: readers get the same
// blueprint until the record changes, then the new one, defaulted.
func TestStoreDecodesOncePerResourceVersion(t *testing.T) {
	s, records := storeOf(t, record("a", "1", blueprintJSON("a", "plugin-1")))
	first, err := s.Blueprint("a")
	if err != nil || first == nil {
		t.Fatalf("Blueprint(a) = %v, %v", first, err)
	}
	again, _ := s.Blueprint("a")
	all, err := s.Blueprints()
	if err != nil || len(all) != 1 {
		t.Fatalf("Blueprints() = %v, %v", all, err)
	}
	if again != first || all[0] != first {
		t.Error("the same resourceVersion was decoded again")
	}
	if first.Spec.DevicePlugin.Name != "plugin-1" || first.Spec.DevicePlugin.Namespace != v1alpha1.DefaultDevicePluginNamespace {
		t.Errorf("device plugin %+v: want plugin-1, defaulted to namespace %s", first.Spec.DevicePlugin, v1alpha1.DefaultDevicePluginNamespace)
	}

	if err := records.Update(record("a", "2", blueprintJSON("a", "plugin-2"))); err != nil {
		t.Fatal(err)
	}
	next, err := s.Blueprint("a")
	if err != nil || next == first || next.Spec.DevicePlugin.Name != "plugin-2" {
		t.Errorf("after an update: %+v, %v; want a new blueprint with plugin-2", next, err)
	}

	if err := records.Delete(record("a", "2", "")); err != nil {
		t.Fatal(err)
	}
	if gone, err := s.Blueprint("a"); gone != nil || err != nil {
		t.Errorf("a deleted record: %v, %v; want none", gone, err)
	}
}

// Blueprints keeps to the records, by name, and names each record that
// does not decode without losing the others.
func TestStoreBlueprints(t *testing.T) {
	stray := record("x", "1", blueprintJSON("x", "p"))
	stray.Name = ConfigMapPrefix + "y"
	s, _ := storeOf(t,
		record("b", "1", blueprintJSON("b", "p")),
		record("a", "1", blueprintJSON("a", "p")),
		record("broken", "1", "{not json"),
		stray,
	)
	bps, err := s.Blueprints()
	var names []string
	for _, bp := range bps {
		names = append(names, bp.Metadata.Name)
	}
	if d := cmp.Diff([]string{"a", "b"}, names); d != "" {
		t.Errorf("blueprints (-want +got):\n%s", d)
	}
	if err == nil || !strings.Contains(err.Error(), ConfigMapName("broken")) {
		t.Errorf("error %v does not name the broken record", err)
	}
}

// What Write records, Decode and List read back; writing the same
// blueprint again writes nothing.
func TestWriteListRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	bp := &v1alpha1.Blueprint{Metadata: v1alpha1.Metadata{Name: "shop"}}
	v1alpha1.SetDefaults(bp)
	if err := Write(ctx, c, bp); err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, c, bp); err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("%d writes for the same blueprint twice, want 1", writes)
	}
	got, err := List(ctx, c)
	if err != nil || len(got) != 1 {
		t.Fatalf("List = %v, %v", got, err)
	}
	if d := cmp.Diff(bp, got[0]); d != "" {
		t.Errorf("read back (-wrote +read):\n%s", d)
	}
}
