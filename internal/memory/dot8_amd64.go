//go:build amd64 && !purego

package memory

import "golang.org/x/sys/cpu"

// useAVX2 says whether dot8 may run dot8AVX2 (every x86-64 CPU since
// 2013–2015 has it; the others take the portable loop).
var useAVX2 = cpu.X86.HasAVX2

// dot8AVX2 is the int8 dot product of a and b, whose common length is a
// multiple of 16: sixteen products at a time (each byte sign-extended to
// 16 bits, multiplied and summed in pairs to 32 bits by VPMADDWD), in
// integers, so it equals the portable loop exactly. Vectors are quantised
// to [-127, 127] (quantise): a pair sums to at most 2·127², far inside
// int32, and so does a row of any length an embedder gives.
//
//go:noescape
func dot8AVX2(a, b []int8) int32
