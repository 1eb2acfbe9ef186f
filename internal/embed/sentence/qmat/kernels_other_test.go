//go:build !amd64

package qmat

func simdKernels() []kernel { return nil }
