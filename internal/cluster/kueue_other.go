//go:build !linux

package cluster

import "syscall"

// kueueProcAttr: only Linux stops a child when its parent dies.
func kueueProcAttr() *syscall.SysProcAttr { return nil }
