//go:build !amd64 || purego

package qmat

func simdKernels() []kernel { return nil }
