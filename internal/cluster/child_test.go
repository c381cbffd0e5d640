package cluster

import (
	"context"
	"strings"
	"testing"
)

// A test binary whose main does not call Child cannot be started again
// as a storage driver's process (it would run its tests): the cluster
// says so, with the fix, rather than start it.
func TestRunDriverNeedsChildInMain(t *testing.T) {
	if childCapable.Load() {
		t.Fatal("this test binary's main calls no Child, yet it is marked as able to run a cluster's child")
	}
	err := (&Cluster{}).runDriver(context.Background(), "late.storage.berth.io")
	if err == nil || !strings.Contains(err.Error(), "storage driver late.storage.berth.io") || !strings.Contains(err.Error(), "call cluster.Child first in the binary's main") {
		t.Fatalf("runDriver = %v; want it refused, naming the driver and the fix", err)
	}
}

// Once the cluster stops, no child starts, and stop waits for those
// running.
func TestChildrenStop(t *testing.T) {
	var ch children
	release := make(chan struct{})
	if !ch.Go(func() { <-release }) {
		t.Fatal("a child did not start before the cluster stopped")
	}
	stopped := make(chan struct{})
	go func() { ch.stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stop returned while a child ran")
	default:
	}
	close(release)
	<-stopped
	if ch.Go(func() {}) {
		t.Error("a child started after the cluster stopped")
	}
}
