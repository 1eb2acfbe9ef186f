//go:build linux

package supervisor

import "syscall"

// sysProcAttr puts the child in its own process group and has the kernel send
// it SIGTERM if the supervisor dies, so a kill -9 of `reverie run` does not
// leave an agent running unsupervised.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
