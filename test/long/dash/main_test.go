//go:build long

package dash_test

import (
	"testing"

	"berth.io/berth/test/harness"
)

// TestMain runs the tests, unless the test binary was started as berth
// (harness.Command). Each test starts the clusters it needs itself.
func TestMain(m *testing.M) { harness.Main(m, func(m *testing.M) int { return m.Run() }) }
