package main

import (
	"strings"
	"testing"
)

// berth-kueue built apart from berth, with another Kueue or another clock
// protocol, stops with the fix; started by hand (no --expect) it runs.
func TestCheckPeer(t *testing.T) {
	own := "Kueue v0.17.1, clock protocol 1"
	for _, expect := range []string{"", own} {
		if err := checkPeer(expect, own); err != nil {
			t.Errorf("checkPeer(%q): %v", expect, err)
		}
	}
	for _, expect := range []string{"Kueue v0.16.0, clock protocol 1", "Kueue v0.17.1, clock protocol 2"} {
		err := checkPeer(expect, own)
		if err == nil {
			t.Fatalf("checkPeer(%q) let a berth-kueue built with %q run", expect, own)
		}
		for _, want := range []string{own, expect, "go build -o bin/ ./cmd/berth ./cmd/berth-kueue"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("checkPeer(%q) = %q, which does not say %q", expect, err, want)
			}
		}
	}
}
