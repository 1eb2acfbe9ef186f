package qmat

import (
	"math"
	"math/rand/v2"
	"testing"
)

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

func TestMulTShortSlices(t *testing.T) {
	m := &Matrix{Rows: 2, Cols: 3, Q: make([]int8, 6), Scale: make([]float32, 2)}
	for _, tc := range []struct {
		name   string
		dst, x []float32
	}{
		{"short dst", make([]float32, 3), make([]float32, 6)},
		{"short x", make([]float32, 4), make([]float32, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("MulT did not panic")
				}
			}()
			m.MulT(tc.dst, tc.x, 2)
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

func TestMulABAndABT(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	const n, m, k = 5, 6, 7
	a := randVec(rng, n*k)
	b := randVec(rng, m*k) // m×k for ABT
	dst := make([]float32, n*m)
	MulABT(dst, a, b, n, m, k)
	bt := make([]float32, k*m) // bᵀ, k×m, for AB
	for j := 0; j < m; j++ {
		for l := 0; l < k; l++ {
			bt[l*m+j] = b[j*k+l]
		}
	}
	dst2 := make([]float32, n*m)
	MulAB(dst2, a, bt, n, m, k)
	for i := range dst {
		var want float64
		ii, j := i/m, i%m
		for l := 0; l < k; l++ {
			want += float64(a[ii*k+l]) * float64(b[j*k+l])
		}
		if math.Abs(float64(dst[i])-want) > 1e-5 || math.Abs(float64(dst2[i])-want) > 1e-5 {
			t.Fatalf("[%d]: ABT %v, AB %v, want %v", i, dst[i], dst2[i], want)
		}
	}
}
