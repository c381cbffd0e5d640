package cluster

import "syscall"

// childProcAttr has the kernel stop a cluster's child process
// (berth-kueue, a storage driver's) with SIGTERM when berth dies, even of
// SIGKILL: no child outlives its cluster.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
