package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

// A change to the autoscaler's profile or a pool's bounds is named field
// by field, old value and new.
func TestDiffJSON(t *testing.T) {
	a := &v1alpha1.AutoscalerProfile{Expander: "random", ScanInterval: &metav1.Duration{Duration: 10e9}}
	b := &v1alpha1.AutoscalerProfile{Expander: "priority", ScanInterval: &metav1.Duration{Duration: 10e9}, MaxEmptyBulkDelete: new(int32)}
	got := diffJSON("spec.autoscaler", a, b)
	want := []string{
		`spec.autoscaler.expander: "random" → "priority"`,
		`spec.autoscaler.maxEmptyBulkDelete: (none) → 0`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diffJSON (-want +got):\n%s", diff)
	}
	if got := diffJSON("x", a, a); len(got) != 0 {
		t.Errorf("diffJSON of equal values = %v, want nothing", got)
	}
}
