package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A blueprint that asks for a shared model volume gets a ReadWriteMany
// class beside the default one, and a ReadWriteMany class is not zonal
// unless it says so.
func TestStorageDefaults(t *testing.T) {
	spec := &Spec{Models: &Models{Store: "file:///m", SharedVolume: &ModelSharedVolume{}}}
	setStorageDefaults(spec)
	var got []string
	for _, c := range spec.Storage.Classes {
		got = append(got, c.Name+" "+string(c.AccessModes[0])+" zonal="+map[bool]string{true: "yes", false: "no"}[c.IsZonal()])
	}
	want := []string{"standard ReadWriteOnce zonal=yes", "shared ReadWriteMany zonal=no"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default classes (-want +got):\n%s", diff)
	}
	if spec.DefaultStorageClassName() != "standard" || spec.SharedStorageClassName() != "shared" {
		t.Errorf("default %q, shared %q; want standard and shared", spec.DefaultStorageClassName(), spec.SharedStorageClassName())
	}
}

// Each mistake in a class is named at its field, with a fix.
func TestValidateStorage(t *testing.T) {
	q := resource.MustParse
	spec := &Spec{
		Models: &Models{Store: "file:///m", SharedVolume: &ModelSharedVolume{}},
		Storage: &Storage{Classes: []StorageClass{
			{Name: "fast", Default: true, MinSize: ptr(q("10Gi")), MaxSize: ptr(q("5Gi"))},
			{Name: "fast", Default: true, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}},
			{Name: "Slow", ProvisioningTime: &metav1.Duration{Duration: -1}, MaxVolumesPerNode: -1, ReclaimPolicy: "Recycle"},
		}},
	}
	var got []string
	for _, p := range validateStorage(nil, spec) {
		got = append(got, p.Field)
		if p.Fix == "" {
			t.Errorf("%s: %s has no fix", p.Field, p.Message)
		}
	}
	want := []string{
		"classes[0].maxSize",
		"classes[1].name",
		"classes[1].default",
		"classes[1].accessModes[0]",
		"classes[2].name",
		"classes[2].provisioningTime",
		"classes[2].maxVolumesPerNode",
		"classes[2].reclaimPolicy",
		"classes",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems at (-want +got):\n%s", diff)
	}
}
