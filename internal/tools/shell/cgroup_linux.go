//go:build linux

package shell

import "syscall"

// startInCgroup makes the command start in the cgroup (v2) open as fd
// (clone3 with CLONE_INTO_CGROUP).
func startInCgroup(attr *syscall.SysProcAttr, fd int) {
	attr.UseCgroupFD, attr.CgroupFD = true, fd
}
