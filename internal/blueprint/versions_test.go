package blueprint

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"berth.io/berth/api/v1alpha1"
)

// embeddedMinor is N of the control plane berth embeds, v1.N.P.
func embeddedMinor(t *testing.T) int {
	t.Helper()
	n, ok := v1alpha1.MinorOf(v1alpha1.ControlPlaneVersion())
	if !ok {
		t.Fatalf("the embedded control plane has no version: %q", v1alpha1.ControlPlaneVersion())
	}
	return n
}

// The version skew policy, at the line of the version that breaks it.
func TestParseRefusesVersionSkew(t *testing.T) {
	n := embeddedMinor(t)
	pool := func(v string) []string {
		return []string{"  - name: gpu\n", fmt.Sprintf("  - name: gpu\n    kubernetesVersion: %q\n", v)}
	}
	testProblems(t, []problemCase{
		{
			name:  "pool newer than the control plane",
			edits: pool(fmt.Sprintf("1.%d", n+1)),
			want: []want{{Line: 14, Field: "spec.pools[1].kubernetesVersion", Message: fmt.Sprintf("is newer than the control plane (1.%d)", n),
				Fix: "raise spec.kubernetesVersion (the control plane) first"}},
		},
		{
			name:  "pool four minors older than the control plane",
			edits: pool(fmt.Sprintf("1.%d", n-4)),
			want: []want{{Line: 14, Field: "spec.pools[1].kubernetesVersion", Message: fmt.Sprintf("is 4 minor versions older than the control plane (1.%d)", n),
				Fix: fmt.Sprintf(`set it to "1.%d" or newer`, n-3)}},
		},
		{
			name:  "pool newer than the spec's control plane",
			edits: append(pool(fmt.Sprintf("1.%d", n)), "  zones:", fmt.Sprintf("  kubernetesVersion: \"1.%d\"\n  zones:", n-1)),
			want: []want{
				{Line: 15, Field: "spec.pools[1].kubernetesVersion", Message: fmt.Sprintf("is newer than the control plane (1.%d)", n-1)},
				{Line: 6, Field: "spec.kubernetesVersion", Warning: true, Message: "the local cluster's control plane is"},
			},
		},
		{
			name:  "pool version that is not one",
			edits: pool("latest"),
			want:  []want{{Line: 14, Field: "spec.pools[1].kubernetesVersion", Message: "is not a Kubernetes version"}},
		},
		{
			name:  "spec newer than the embedded control plane",
			edits: []string{"  zones:", fmt.Sprintf("  kubernetesVersion: \"1.%d\"\n  zones:", n+1)},
			want: []want{{Line: 6, Field: "spec.kubernetesVersion", Message: "is newer than the control plane berth embeds",
				Fix: fmt.Sprintf(`set it to "1.%d" or older`, n)}},
		},
	})
}

// A design that targets an older control plane than berth's is accepted
// with a warning, and its pools take its version.
func TestParseWarnsOfOlderTarget(t *testing.T) {
	n := embeddedMinor(t)
	bp, got, err := Parse("bp.yaml", []byte(edit(t, "  zones:", fmt.Sprintf("  kubernetesVersion: \"1.%d\"\n  zones:", n-1),
		"  - name: gpu\n", fmt.Sprintf("  - name: gpu\n    kubernetesVersion: \"1.%d\"\n", n-3))))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	wants := []want{{Line: 6, Field: "spec.kubernetesVersion", Warning: true, Message: "the local cluster's control plane is " + v1alpha1.ControlPlaneVersion()}}
	if diff := cmp.Diff(wants, match(got, wants)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	for i, v := range []string{fmt.Sprintf("v1.%d.0", n-1), fmt.Sprintf("v1.%d.0", n-3)} {
		if got := bp.Spec.Pools[i].KubeletVersion(); got != v {
			t.Errorf("pool %s kubelet version = %s, want %s", bp.Spec.Pools[i].Name, got, v)
		}
	}
}
