package qmat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// mulTRef is the element-by-element product (the API's first, reference
// implementation), which the kernels are tested and measured against.
func mulTRef(m *Matrix, dst, x []float32, n int) {
	for r := 0; r < m.Rows; r++ {
		row := m.Q[r*m.Cols : (r+1)*m.Cols]
		s := m.Scale[r]
		for i := 0; i < n; i++ {
			xi := x[i*m.Cols : (i+1)*m.Cols]
			var acc float32
			for c, q := range row {
				acc += xi[c] * float32(q)
			}
			dst[i*m.Rows+r] = acc * s
		}
	}
}

func randMatrix(rng *rand.Rand, rows, cols int) *Matrix {
	m := &Matrix{Rows: rows, Cols: cols, Q: make([]int8, rows*cols), Scale: make([]float32, rows)}
	for i := range m.Q {
		m.Q[i] = int8(rng.IntN(255) - 127)
	}
	for i := range m.Scale {
		m.Scale[i] = rng.Float32() / 64
	}
	return m
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

// kernel is one implementation of mulT, named for test and benchmark output.
type kernel struct {
	name string
	f    func(m *Matrix, dst, x []float32, n int)
}

// kernels lists every mulT implementation this machine can run: the
// reference, the portable one and the SIMD ones the CPU supports.
func kernels() []kernel {
	return append([]kernel{{"ref", mulTRef}, {"go", mulTGo}}, simdKernels()...)
}

// checkMulT compares dst with the float64 product, allowing float32
// rounding relative to the sum of the terms' magnitudes.
func checkMulT(t *testing.T, m *Matrix, x, dst []float32, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		for r := 0; r < m.Rows; r++ {
			var want, mag float64
			for c := 0; c < m.Cols; c++ {
				v := float64(x[i*m.Cols+c]) * float64(m.Q[r*m.Cols+c])
				want += v
				mag += math.Abs(v)
			}
			want *= float64(m.Scale[r])
			mag *= math.Abs(float64(m.Scale[r]))
			got := float64(dst[i*m.Rows+r])
			if d := math.Abs(got - want); d > 1e-6*mag*math.Sqrt(float64(m.Cols)+1)+1e-30 || math.IsNaN(got) {
				t.Fatalf("n=%d %dx%d: dst[%d][%d] = %v, want %v (terms' magnitude %v)", n, m.Rows, m.Cols, i, r, got, want, mag)
			}
		}
	}
}

func TestMulT(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, rows, cols int
	}{
		{"one by one", 1, 1, 1},
		{"one row", 1, 7, 5},
		{"one column", 5, 9, 1},
		{"one weight row", 3, 1, 24},
		{"seven columns", 7, 4, 7},
		{"odd sizes", 3, 13, 37},
		{"tails of every block", 7, 11, 45},
		{"primes", 13, 17, 131},
		{"one more than blocks", 9, 9, 33},
		{"one less than blocks", 11, 7, 31},
		{"column block boundary", 5, 3, 512},
		{"past column block", 6, 5, 513},
		{"two column blocks and a tail", 4, 4, 1100},
		{"rows past groups of four", 7, 7, 48},
		{"one row past a group", 13, 5, 32},
		{"two rows past groups", 8, 10, 64},
		{"sixteen columns", 6, 4, 16},
		{"encoder sized", 9, 64, 256},
		{"twelve-row blocks, odd weight rows", 25, 7, 48},
		{"twelve-row blocks past 768 columns", 13, 8, 784},
		{"query", 12, 32, 512},
		{"wide", 2, 6, 1536},
		{"text", 128, 16, 256},
	} {
		for _, k := range kernels() {
			t.Run(tc.name+"/"+k.name, func(t *testing.T) {
				prev := mulT
				mulT = k.f
				t.Cleanup(func() { mulT = prev })
				rng := rand.New(rand.NewPCG(1, uint64(tc.rows*1000+tc.cols)))
				m := randMatrix(rng, tc.rows, tc.cols)
				x := randVec(rng, tc.n*tc.cols)
				// dst has a guard past its end that no kernel may touch,
				// and stale values in it that every kernel must overwrite.
				dst := make([]float32, tc.n*tc.rows+8)
				for i := range dst {
					dst[i] = 12345
				}
				m.MulT(dst[:tc.n*tc.rows], x, tc.n)
				checkMulT(t, m, x, dst, tc.n)
				for i, v := range dst[tc.n*tc.rows:] {
					if v != 12345 {
						t.Fatalf("guard[%d] = %v: written past dst", i, v)
					}
				}
			})
		}
	}
}

// TestMulTExtremes runs every kernel on the int8 range's ends, where a
// kernel that widened bytes wrongly (zero- for sign-extension) would fail.
func TestMulTExtremes(t *testing.T) {
	for _, k := range kernels() {
		t.Run(k.name, func(t *testing.T) {
			const n, rows, cols = 5, 6, 67
			m := &Matrix{Rows: rows, Cols: cols, Q: make([]int8, rows*cols), Scale: make([]float32, rows)}
			for i := range m.Q {
				m.Q[i] = []int8{-128, 127, -1, 1, 0}[i%5]
			}
			for r := range m.Scale {
				m.Scale[r] = float32(r+1) / 8
			}
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			dst := make([]float32, n*rows)
			k.f(m, dst, x, n)
			checkMulT(t, m, x, dst, n)
		})
	}
}

func TestMulTEmpty(t *testing.T) {
	m := &Matrix{Rows: 3, Cols: 0, Scale: []float32{1, 1, 1}}
	dst := []float32{1, 2, 3}
	m.MulT(dst, nil, 1)
	if dst[0] != 0 || dst[1] != 0 || dst[2] != 0 {
		t.Fatalf("zero columns: dst = %v, want zeros", dst)
	}
	m.MulT(nil, nil, 0) // no rows of x: nothing to do, nothing to check
}

// TestShortSlices checks that every product panics on a slice too short
// for its shape, before any kernel (assembly has no bounds checks) runs.
func TestShortSlices(t *testing.T) {
	m := &Matrix{Rows: 2, Cols: 16, Q: make([]int8, 32), Scale: make([]float32, 2)}
	f := func(n int) []float32 { return make([]float32, n) }
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"MulT short dst", func() { m.MulT(f(3), f(32), 2) }},
		{"MulT short x", func() { m.MulT(f(4), f(31), 2) }},
		{"MulT short Q", func() { (&Matrix{Rows: 2, Cols: 16, Q: make([]int8, 31), Scale: f(2)}).MulT(f(4), f(32), 2) }},
		{"MulT short Scale", func() { (&Matrix{Rows: 2, Cols: 16, Q: make([]int8, 32), Scale: f(1)}).MulT(f(4), f(32), 2) }},
		{"MulABT short dst", func() { MulABT(f(5), f(32), f(48), 2, 3, 16) }},
		{"MulABT short a", func() { MulABT(f(6), f(31), f(48), 2, 3, 16) }},
		{"MulABT short b", func() { MulABT(f(6), f(32), f(47), 2, 3, 16) }},
		{"MulAB short dst", func() { MulAB(f(31), f(32), f(256), 2, 16, 16) }},
		{"MulAB short a", func() { MulAB(f(32), f(31), f(256), 2, 16, 16) }},
		{"MulAB short b", func() { MulAB(f(32), f(32), f(255), 2, 16, 16) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.call()
		})
	}
}

// FuzzMulT checks every kernel against the float64 product on shapes and
// values drawn from the fuzzer's bytes.
func FuzzMulT(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint16(1), uint64(1))
	f.Add(uint8(13), uint8(7), uint16(37), uint64(2))
	f.Add(uint8(12), uint8(9), uint16(515), uint64(3))
	f.Fuzz(func(t *testing.T, n, rows uint8, cols uint16, seed uint64) {
		nn, rr, cc := int(n%40)+1, int(rows%40)+1, int(cols%1100)+1
		if seed%2 == 0 {
			cc = (cc + 15) &^ 15 // the AVX-512 kernel's widths
		}
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		m := randMatrix(rng, rr, cc)
		x := randVec(rng, nn*cc)
		for _, k := range kernels() {
			dst := make([]float32, nn*rr)
			k.f(m, dst, x, nn)
			checkMulT(t, m, x, dst, nn)
		}
	})
}

// floatKernel is one implementation of mulABT and mulAB.
type floatKernel struct {
	name    string
	abt, ab func(dst, a, b []float32, n, m, k int)
}

// floatKernels lists every mulABT and mulAB this machine can run.
func floatKernels() []floatKernel {
	return append([]floatKernel{{"go", mulABTGo, mulABGo}}, simdFloatKernels()...)
}

// checkABT compares dst with a·bᵀ (bT false) or a·b (bT true: b is k×m)
// in float64, allowing float32 rounding relative to the terms' magnitudes.
func checkAB(t *testing.T, what string, dst, a, b []float32, n, m, k int, kByM bool) {
	t.Helper()
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			var want, mag float64
			for l := 0; l < k; l++ {
				bv := b[j*k+l]
				if kByM {
					bv = b[l*m+j]
				}
				v := float64(a[i*k+l]) * float64(bv)
				want += v
				mag += math.Abs(v)
			}
			got := float64(dst[i*m+j])
			if d := math.Abs(got - want); d > 1e-6*mag*math.Sqrt(float64(k)+1)+1e-30 || math.IsNaN(got) {
				t.Fatalf("%s n=%d m=%d k=%d: dst[%d][%d] = %v, want %v (terms' magnitude %v)", what, n, m, k, i, j, got, want, mag)
			}
		}
	}
}

// runFloat runs MulABT and MulAB with kernel fk on random a and b and
// checks both, with a guard past dst's end.
func runFloat(t *testing.T, fk floatKernel, rng *rand.Rand, n, m, k int) {
	t.Helper()
	prevABT, prevAB := mulABT, mulAB
	mulABT, mulAB = fk.abt, fk.ab
	defer func() { mulABT, mulAB = prevABT, prevAB }()
	a := randVec(rng, n*k)
	b := randVec(rng, m*k)
	for _, op := range []struct {
		name string
		f    func(dst, a, b []float32, n, m, k int)
		kByM bool
	}{{"MulABT", MulABT, false}, {"MulAB", MulAB, true}} {
		dst := make([]float32, n*m+8)
		for i := range dst {
			dst[i] = 12345
		}
		op.f(dst[:n*m], a, b, n, m, k)
		checkAB(t, op.name+"/"+fk.name, dst, a, b, n, m, k, op.kByM)
		for i, v := range dst[n*m:] {
			if v != 12345 {
				t.Fatalf("%s/%s: guard[%d] = %v: written past dst", op.name, fk.name, i, v)
			}
		}
	}
}

func TestMulABAndABT(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, m, k int
	}{
		{"one by one", 1, 1, 1},
		{"small odd", 5, 6, 7},
		{"odd everything", 7, 13, 37},
		{"eight", 8, 8, 8},
		{"sixteen wide", 3, 16, 9},
		{"past sixteen", 7, 17, 24},
		{"thirty-three", 13, 33, 33},
		{"attention layer 0", 12, 12, 64},
		{"attention layer 1", 128, 128, 128},
		{"values layer 0", 20, 64, 20},
		{"long k", 2, 5, 300},
	} {
		for _, fk := range floatKernels() {
			t.Run(tc.name+"/"+fk.name, func(t *testing.T) {
				runFloat(t, fk, rand.New(rand.NewPCG(2, uint64(tc.n*10000+tc.m*100+tc.k))), tc.n, tc.m, tc.k)
			})
		}
	}
}

// FuzzMulAB checks every MulABT and MulAB kernel against the float64
// products on shapes drawn from the fuzzer's bytes.
func FuzzMulAB(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint64(1))
	f.Add(uint8(13), uint8(17), uint8(64), uint64(2))
	f.Fuzz(func(t *testing.T, n, m, k uint8, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed>>5))
		for _, fk := range floatKernels() {
			runFloat(t, fk, rng, int(n%40)+1, int(m%70)+1, int(k%140)+1)
		}
	})
}

func TestFloatEmpty(t *testing.T) {
	dst := []float32{1, 2}
	MulABT(dst, nil, nil, 1, 2, 0)
	if dst[0] != 0 || dst[1] != 0 {
		t.Fatalf("MulABT with k=0: dst = %v, want zeros", dst)
	}
	dst = []float32{1, 2}
	MulAB(dst, nil, nil, 2, 1, 0)
	if dst[0] != 0 || dst[1] != 0 {
		t.Fatalf("MulAB with k=0: dst = %v, want zeros", dst)
	}
	MulABT(nil, nil, nil, 0, 3, 3)
	MulAB(nil, nil, nil, 3, 0, 3)
}

// TestMulTRowsIndependent checks that each kernel computes a row of x the
// same, bit for bit, whatever block of rows it falls in: a text's vectors
// do not depend on how many pieces it has around them.
func TestMulTRowsIndependent(t *testing.T) {
	for _, k := range kernels() {
		for _, s := range []struct{ rows, cols int }{{7, 48}, {16, 256}, {9, 784}, {10, 37}} {
			t.Run(fmt.Sprintf("%s/%dx%d", k.name, s.cols, s.rows), func(t *testing.T) {
				const n = 29
				rng := rand.New(rand.NewPCG(5, uint64(s.cols)))
				m := randMatrix(rng, s.rows, s.cols)
				x := randVec(rng, n*s.cols)
				all := make([]float32, n*s.rows)
				k.f(m, all, x, n)
				one := make([]float32, s.rows)
				for i := 0; i < n; i++ {
					k.f(m, one, x[i*s.cols:(i+1)*s.cols], 1)
					for r, v := range one {
						if all[i*s.rows+r] != v {
							t.Fatalf("row %d of %d, column %d: %v, alone %v", i, n, r, all[i*s.rows+r], v)
						}
					}
				}
			})
		}
	}
}

// TestFloatRowsIndependent is TestMulTRowsIndependent for MulABT and
// MulAB: row i of a gives the same row of dst alone or among n rows.
func TestFloatRowsIndependent(t *testing.T) {
	const n, m, k = 29, 37, 70
	rng := rand.New(rand.NewPCG(6, 6))
	a, b := randVec(rng, n*k), randVec(rng, m*k)
	for _, fk := range floatKernels() {
		for _, op := range []struct {
			name string
			f    func(dst, a, b []float32, n, m, k int)
		}{{"ABT", fk.abt}, {"AB", fk.ab}} {
			t.Run(fk.name+"/"+op.name, func(t *testing.T) {
				all := make([]float32, n*m)
				op.f(all, a, b, n, m, k)
				one := make([]float32, m)
				for i := 0; i < n; i++ {
					op.f(one, a[i*k:(i+1)*k], b, 1, m, k)
					for j, v := range one {
						if all[i*m+j] != v {
							t.Fatalf("row %d of %d, column %d: %v, alone %v", i, n, j, all[i*m+j], v)
						}
					}
				}
			})
		}
	}
}
