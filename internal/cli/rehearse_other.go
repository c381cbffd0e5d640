//go:build !linux

package cli

import "syscall"

// childProcAttr is nil where the kernel cannot stop a child when its
// parent dies: a rehearsal's child outlives a parent killed with SIGKILL
// there, and the next rehearsal removes its directory once it ends.
func childProcAttr() *syscall.SysProcAttr { return nil }
