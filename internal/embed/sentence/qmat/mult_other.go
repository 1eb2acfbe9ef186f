//go:build !amd64 || purego

package qmat

// There is no SIMD kernel for this architecture: MulT runs mulTGo.
