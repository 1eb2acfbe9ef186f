//go:build !linux

package shell

import "syscall"

// startInCgroup does nothing: cgroups are Linux's (no limits group is made
// elsewhere, so this is never reached with one).
func startInCgroup(*syscall.SysProcAttr, int) {}
