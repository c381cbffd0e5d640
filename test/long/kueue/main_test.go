//go:build long

package kueue_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"berth.io/berth/internal/cluster"
	"berth.io/berth/test/harness"
)

// TestMain builds berth-kueue, the process `berth up` runs Kueue in, and
// names it to the berth this test binary acts as; then runs the tests,
// unless the binary was started as berth (harness.Command).
func TestMain(m *testing.M) {
	harness.Main(m, func(m *testing.M) int {
		dir, err := os.MkdirTemp("", "berth-kueue-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary := filepath.Join(dir, "berth-kueue")
		build := exec.Command("go", "build", "-o", binary, "berth.io/berth/cmd/berth-kueue")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building berth-kueue:", err)
			return 1
		}
		os.Setenv(cluster.KueueBinaryEnv, binary)
		return m.Run()
	})
}
