//go:build !purego

package qmat

import "golang.org/x/sys/cpu"

func simdKernels() []kernel {
	var ks []kernel
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, kernel{"avx2", mulTAVX2})
		if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL {
			ks = append(ks, kernel{"avx512", mulTAVX512})
		}
	}
	return ks
}

func simdFloatKernels() []floatKernel {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		return []floatKernel{{"avx2", mulABTAVX2, mulABAVX2}}
	}
	return nil
}
