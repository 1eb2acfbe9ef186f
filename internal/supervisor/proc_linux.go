//go:build linux

package supervisor

import "syscall"

// sysProcAttr puts the child in its own process group and has the kernel send
// it SIGTERM if the supervisor dies, so a kill -9 of `reverie run` does not
// leave an agent running unsupervised. (The kernel ties the death signal to
// the thread that forked; Go only ends threads whose goroutine exits while
// locked to them, so a spurious SIGTERM is possible only in that rare case,
// and it is then handled like any other exit.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
