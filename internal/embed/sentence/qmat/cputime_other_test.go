//go:build !linux

package qmat

import "time"

// threadCPU is not measured on this system: benchmarks report no CPU-time
// rate.
func threadCPU() time.Duration { return 0 }
