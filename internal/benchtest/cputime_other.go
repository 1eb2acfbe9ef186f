//go:build !linux

package benchtest

import "time"

// ThreadCPU is not measured on this system: it returns 0, and benchmarks
// report no CPU-time rate.
func ThreadCPU() time.Duration { return 0 }
