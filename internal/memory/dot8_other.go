//go:build !amd64 || purego

package memory

// useAVX2 is false where there is no assembly (see dot8_amd64.go).
const useAVX2 = false

// dot8AVX2 is never called here (useAVX2 is false).
func dot8AVX2(a, b []int8) int32 { panic("memory: dot8AVX2 without AVX2") }
