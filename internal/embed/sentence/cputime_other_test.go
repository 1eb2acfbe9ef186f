//go:build !linux

package sentence

import "time"

// threadCPU is not measured on this system: benchmarks report no CPU-time
// rate.
func threadCPU() time.Duration { return 0 }
