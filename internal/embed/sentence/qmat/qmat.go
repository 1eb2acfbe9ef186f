// Package qmat provides the matrix products of the built-in sentence
// encoder: an int8 matrix with a float32 scale per row (weights, read in
// place from the binary) times float32 activations, and the float32
// products of attention.
//
// Every function is pure and safe for concurrent use; none allocates or
// starts goroutines (callers run texts in parallel if they want to).
//
// The products run on the fastest kernel the CPU has, chosen once at init
// from golang.org/x/sys/cpu: on amd64 with AVX2 and FMA, Go assembly
// written by asm_gen.go (go generate) for MulT, MulABT and MulAB, and with
// AVX-512F and VL wider MulT kernels; elsewhere, or built with -tags
// purego, blocked pure Go. The int8 weights are widened in registers or a
// small stack scratch (never copied to the heap) and every sum is float32
// (with fused multiply-adds in assembly), so the kernels agree with the
// element-by-element product to float32 rounding but not bit for bit. On
// one machine each row of a result depends only on its own row of input,
// bit for bit, whatever rows come with it (TestMulTRowsIndependent);
// between machines with different CPU features the last bits may differ.
//
// The tests check every kernel the machine runs against a float64 product
// (TestMulT, FuzzMulT, FuzzMulAB); BenchmarkMulT, BenchmarkMulTSIMD and
// BenchmarkAttention report GFLOP/s over wall time and over the thread's
// CPU time.
package qmat

// Matrix is a Rows×Cols int8 matrix stored row by row with one float32
// scale per row: element (r, c) is Scale[r] * float32(Q[r*Cols+c]).
type Matrix struct {
	Rows, Cols int
	Q          []int8
	Scale      []float32
}

// MulT sets dst[i*m.Rows+r] to Σ_c x[i*m.Cols+c] · m(r, c) for each of the
// n rows of x: dst = x · mᵀ, where x holds n rows of m.Cols values and dst
// receives n rows of m.Rows. It panics if a slice is too short.
//
// The sums are float32 in an order that depends on the machine's kernel, so
// results agree with the element-by-element product to float32 rounding,
// not bit for bit across machines.
func (m *Matrix) MulT(dst, x []float32, n int) {
	if n <= 0 || m.Rows == 0 {
		return
	}
	_ = dst[n*m.Rows-1]
	if m.Cols == 0 {
		clear(dst[:n*m.Rows])
		return
	}
	_ = x[n*m.Cols-1]
	_ = m.Q[m.Rows*m.Cols-1]
	_ = m.Scale[m.Rows-1]
	mulT(m, dst, x, n)
}

// mulT is the kernel MulT runs: mulTGo, or a SIMD kernel chosen at init
// when the CPU has one. Its arguments are checked by MulT. Tests switch it
// to run every path on one machine.
var mulT = mulTGo

// Row returns row r of m as float32 values in dst (len(dst) ≥ m.Cols), as
// an embedding lookup reads it.
func (m *Matrix) Row(dst []float32, r int) {
	row := m.Q[r*m.Cols : (r+1)*m.Cols]
	s := m.Scale[r]
	for c, q := range row {
		dst[c] = s * float32(q)
	}
}

// MulABT sets dst[i*m+j] to Σ_l a[i*k+l] · b[j*k+l]: dst = a · bᵀ for a of
// n×k and b of m×k (attention's scores, Q·Kᵀ). It panics if a slice is
// too short.
func MulABT(dst, a, b []float32, n, m, k int) {
	if n <= 0 || m <= 0 {
		return
	}
	_ = dst[n*m-1]
	if k <= 0 {
		clear(dst[:n*m])
		return
	}
	_ = a[n*k-1]
	_ = b[m*k-1]
	mulABT(dst, a, b, n, m, k)
}

// MulAB sets dst[i*m+j] to Σ_l a[i*k+l] · b[l*m+j]: dst = a · b for a of
// n×k and b of k×m (attention's weighted values, P·V). It panics if a
// slice is too short.
func MulAB(dst, a, b []float32, n, m, k int) {
	if n <= 0 || m <= 0 {
		return
	}
	_ = dst[n*m-1]
	if k <= 0 {
		clear(dst[:n*m])
		return
	}
	_ = a[n*k-1]
	_ = b[k*m-1]
	mulAB(dst, a, b, n, m, k)
}

// mulABT and mulAB are the kernels MulABT and MulAB run, with arguments
// they checked: the portable ones, or SIMD ones chosen at init.
var (
	mulABT = mulABTGo
	mulAB  = mulABGo
)

// mulABTGo is the portable a · bᵀ: one Dot per element.
func mulABTGo(dst, a, b []float32, n, m, k int) {
	for i := 0; i < n; i++ {
		ai := a[i*k : (i+1)*k]
		for j := 0; j < m; j++ {
			dst[i*m+j] = Dot(ai, b[j*k:(j+1)*k])
		}
	}
}

// mulABGo is the portable a · b: one Axpy per element of a.
func mulABGo(dst, a, b []float32, n, m, k int) {
	for i := 0; i < n; i++ {
		di := dst[i*m : (i+1)*m]
		clear(di)
		for l := 0; l < k; l++ {
			Axpy(di, b[l*m:(l+1)*m], a[i*k+l])
		}
	}
}

// Dot returns Σ a[i]·b[i] over len(a) values (b at least as long).
//
// It keeps four partial sums (elements i mod 4) so that the additions do
// not wait on each other, and adds them as (s0+s1)+(s2+s3).
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x, y := a[i:i+4], b[i:i+4]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Axpy adds alpha·x[i] to y[i] over len(y) values (x at least as long).
func Axpy(y, x []float32, alpha float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += alpha * x[i]
	}
}
