package architecture

import (
	"os/exec"
	"strings"
	"testing"
)

// berth never links Kueue's code, only its API types: Kueue registers
// its feature gates (sigs.k8s.io/kueue/pkg/features) in the process-wide
// gate Kubernetes' components register theirs in, under a name both use
// with other definitions (DynamicResourceAllocation), and berth panics at
// start-up with both. Kueue runs in berth-kueue, a binary of its own
// (ARCHITECTURE.md says what one binary would take).
func TestBerthLinksNoKueueCode(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/berth")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/berth: %v", err)
	}
	apis := 0
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case !strings.HasPrefix(pkg, "sigs.k8s.io/kueue/"):
		case strings.HasPrefix(pkg, "sigs.k8s.io/kueue/apis/"):
			apis++
		default:
			t.Errorf("cmd/berth links %s: only Kueue's API types (sigs.k8s.io/kueue/apis/...) may be; Kueue's code runs in cmd/berth-kueue", pkg)
		}
	}
	if apis == 0 {
		t.Error("cmd/berth links none of Kueue's API types: has go list's output changed?")
	}
}
