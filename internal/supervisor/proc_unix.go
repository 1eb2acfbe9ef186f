//go:build unix

package supervisor

import (
	"errors"
	"os"
	"syscall"
)

// terminate asks the child to stop.
func terminate(p *os.Process) error {
	return p.Signal(syscall.SIGTERM)
}

// killGroup SIGKILLs every process in the process group led by pid (the
// child was started with Setpgid, so its group id is its pid). A group that
// no longer exists is not an error.
func killGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// diedOfSIGTERM reports whether the process was terminated by SIGTERM, which
// during a shutdown counts as a clean stop (a child without a handler).
func diedOfSIGTERM(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}
