package qmat

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// guarded returns a slice of n zero values whose last element ends where
// an inaccessible page begins, so that a kernel reading or writing past
// it faults instead of passing unnoticed.
func guarded[T any](t *testing.T, n int) []T {
	t.Helper()
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	page := unix.Getpagesize()
	body := (size + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, body+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	if err := unix.Mprotect(mem[body:], unix.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&mem[body-size])), n)
}

// TestKernelsStayInBounds runs every kernel with each operand ending at an
// inaccessible page: assembly has no bounds checks, and an access past
// the operands' ends would crash the test.
func TestKernelsStayInBounds(t *testing.T) {
	for _, s := range []struct{ n, rows, cols int }{
		{1, 1, 1}, {1, 1, 8}, {3, 5, 16}, {7, 7, 48}, {13, 6, 37}, {25, 9, 256}, {12, 4, 784}, {6, 3, 1536},
	} {
		for _, k := range kernels() {
			t.Run(fmt.Sprintf("MulT/%s/n=%d/%dx%d", k.name, s.n, s.cols, s.rows), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(8, uint64(s.cols)))
				src := randMatrix(rng, s.rows, s.cols)
				m := &Matrix{Rows: s.rows, Cols: s.cols, Q: guarded[int8](t, s.rows*s.cols), Scale: guarded[float32](t, s.rows)}
				copy(m.Q, src.Q)
				copy(m.Scale, src.Scale)
				x := guarded[float32](t, s.n*s.cols)
				copy(x, randVec(rng, s.n*s.cols))
				dst := guarded[float32](t, s.n*s.rows)
				k.f(m, dst, x, s.n)
				checkMulT(t, m, x, dst, s.n)
			})
		}
	}
	for _, s := range []struct{ n, m, k int }{{1, 1, 1}, {2, 16, 8}, {7, 17, 24}, {13, 33, 70}, {12, 64, 12}, {6, 128, 128}} {
		for _, fk := range floatKernels() {
			t.Run(fmt.Sprintf("ABT+AB/%s/n=%d/m=%d/k=%d", fk.name, s.n, s.m, s.k), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(9, uint64(s.k)))
				a := guarded[float32](t, s.n*s.k)
				copy(a, randVec(rng, s.n*s.k))
				b := guarded[float32](t, s.m*s.k)
				copy(b, randVec(rng, s.m*s.k))
				dst := guarded[float32](t, s.n*s.m)
				fk.abt(dst, a, b, s.n, s.m, s.k)
				checkAB(t, "ABT", dst, a, b, s.n, s.m, s.k, false)
				fk.ab(dst, a, b, s.n, s.m, s.k)
				checkAB(t, "AB", dst, a, b, s.n, s.m, s.k, true)
			})
		}
	}
}
