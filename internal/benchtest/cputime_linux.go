package benchtest

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU is the CPU time the calling thread has used (pair it with
// runtime.LockOSThread), or 0 when it cannot be read.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
