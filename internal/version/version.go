// Package version stamps the Kubernetes version berth embeds into the
// control plane, so the cluster reports v1.36.3 rather than
// v0.0.0-master even when built with plain `go build` (no -ldflags).
//
// The version comes from the build's own module list: whatever
// k8s.io/kubernetes go.mod pins is what runs, and what is reported.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	_ "unsafe" // for go:linkname

	"k8s.io/component-base/version"
)

// These are the variables `-ldflags -X k8s.io/component-base/version...`
// would set; berth sets them at init instead.
var (
	//go:linkname gitVersion k8s.io/component-base/version.gitVersion
	gitVersion string
	//go:linkname gitMajor k8s.io/component-base/version.gitMajor
	gitMajor string
	//go:linkname gitMinor k8s.io/component-base/version.gitMinor
	gitMinor string
	//go:linkname gitTreeState k8s.io/component-base/version.gitTreeState
	gitTreeState string
	//go:linkname dynamicGitVersion k8s.io/component-base/version.dynamicGitVersion
	dynamicGitVersion atomic.Value
)

// pinned is the k8s.io/kubernetes release go.mod requires.
const pinned = "v1.36.3"

// Berth is berth's own version, from the main module's build info.
var Berth = "(devel)"

func init() {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if v := info.Main.Version; v != "" {
		Berth = v
	}
	if !strings.HasPrefix(gitVersion, "v0.0.0-master") {
		return // stamped with -ldflags; trust it
	}
	// Test binaries carry no module list; they get the release go.mod
	// pins (TestPinnedIsGoMods keeps the two in step).
	v := pinned
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			v = dep.Version
		}
	}
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return
	}
	gitVersion, gitMajor, gitMinor, gitTreeState = v, parts[0], parts[1], "clean"
	dynamicGitVersion.Store(v)
}

// Kubernetes is the Kubernetes version the embedded control plane reports.
func Kubernetes() string { return version.Get().GitVersion }

// kueuePinned is the Kueue module go.mod requires, for a binary that
// carries no module list (a test's; TestPinnedIsGoMods keeps the two in
// step).
const kueuePinned = "v0.17.1"

// Kueue is the version of Kueue's module the binary was built with.
func Kueue() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "sigs.k8s.io/kueue" {
				return dep.Version
			}
		}
	}
	return kueuePinned
}

// Peer is what berth and berth-kueue, built apart, compare when berth
// starts berth-kueue: the Kueue module each was built with and the
// version of the clock's line protocol each speaks (protocol:
// simtime.RemoteProtocol).
func Peer(protocol int) string {
	return fmt.Sprintf("Kueue %s, clock protocol %d", Kueue(), protocol)
}
