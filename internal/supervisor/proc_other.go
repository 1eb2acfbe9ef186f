//go:build !unix

package supervisor

import (
	"errors"
	"os"
	"syscall"
)

// sysProcAttr has nothing to set where there are no process groups.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// terminate stops the child; without POSIX signals it is killed.
func terminate(p *os.Process) error { return p.Kill() }

// killGroup kills the child itself; there is no process group to kill.
func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// diedOfSIGTERM is never true without POSIX signals.
func diedOfSIGTERM(*os.ProcessState) bool { return false }
