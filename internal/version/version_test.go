package version

import (
	"os"
	"regexp"
	"testing"
)

// The release a test binary reports is the one go.mod pins.
func TestPinnedIsGoMods(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/kubernetes")
	}
	if string(m[1]) != pinned {
		t.Errorf("go.mod requires k8s.io/kubernetes %s, version.pinned is %s: set pinned to %s", m[1], pinned, m[1])
	}
	if got := Kubernetes(); got != pinned {
		t.Errorf("Kubernetes() = %s, want %s", got, pinned)
	}
}

// The Kueue a test binary reports is the one go.mod pins: berth and
// berth-kueue compare theirs at start.
func TestKueuePinnedIsGoMods(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*sigs\.k8s\.io/kueue (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no sigs.k8s.io/kueue")
	}
	if string(m[1]) != kueuePinned {
		t.Errorf("go.mod requires sigs.k8s.io/kueue %s, version.kueuePinned is %s: set kueuePinned to %s", m[1], kueuePinned, m[1])
	}
	if got := Kueue(); got != kueuePinned {
		t.Errorf("Kueue() = %s, want %s", got, kueuePinned)
	}
}
