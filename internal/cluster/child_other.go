//go:build !linux

package cluster

import "syscall"

// childProcAttr: only Linux stops a child when its parent dies.
func childProcAttr() *syscall.SysProcAttr { return nil }
