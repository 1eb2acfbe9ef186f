//go:build !purego

package qmat

import "golang.org/x/sys/cpu"

func simdKernels() []kernel {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		return []kernel{{"avx2", mulTAVX2}}
	}
	return nil
}
