//go:build !amd64 || purego

package qmat

func simdKernels() []kernel { return nil }

func simdFloatKernels() []floatKernel { return nil }
