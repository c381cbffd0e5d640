package cluster

import "syscall"

// kueueProcAttr has the kernel stop berth-kueue (SIGTERM) when berth
// dies, even of SIGKILL: no Kueue outlives its cluster.
func kueueProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
