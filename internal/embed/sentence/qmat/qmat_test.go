package qmat

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naive computes x · mᵀ element by element in float64.
func naive(m *Matrix, x []float32, n int) []float64 {
	out := make([]float64, n*m.Rows)
	for i := 0; i < n; i++ {
		for r := 0; r < m.Rows; r++ {
			var acc float64
			for c := 0; c < m.Cols; c++ {
				acc += float64(x[i*m.Cols+c]) * float64(m.Scale[r]) * float64(m.Q[r*m.Cols+c])
			}
			out[i*m.Rows+r] = acc
		}
	}
	return out
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

func TestMulT(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, rows, cols int
	}{
		{"one row", 1, 7, 5},
		{"odd sizes", 3, 13, 37},
		{"encoder sized", 9, 64, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.rows)))
			m := randMatrix(rng, tc.rows, tc.cols)
			x := randVec(rng, tc.n*tc.cols)
			dst := make([]float32, tc.n*tc.rows)
			m.MulT(dst, x, tc.n)
			want := naive(m, x, tc.n)
			for i := range dst {
				if d := math.Abs(float64(dst[i]) - want[i]); d > 1e-4*(1+math.Abs(want[i])) {
					t.Fatalf("dst[%d] = %v, want %v", i, dst[i], want[i])
				}
			}
		})
	}
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
