package cli

import "syscall"

// childProcAttr has the kernel stop a rehearsal's child (SIGTERM, which
// it handles as Ctrl-C) when its parent dies, even of SIGKILL.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
