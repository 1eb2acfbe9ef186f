package qmat

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/reverie-ai/reverie/internal/benchtest"
)

// encoderShapes are the rows×cols of the weight matrices the sentence
// encoder multiplies per text (input width → output width).
var encoderShapes = []struct{ cols, rows int }{
	{256, 768}, {256, 512}, {512, 1536}, {1536, 512}, {512, 512},
}

// benchMulT reports GFLOP/s (2·n·rows·cols per call) of f on the encoder's
// shapes for a 12-piece query and a 128-piece text: over wall time, and as
// cpu-GFLOP/s over the thread's CPU time, steadier on a shared machine.
func benchMulT(b *testing.B, f func(m *Matrix, dst, x []float32, n int)) {
	for _, n := range []int{1, 12, 128} {
		for _, s := range encoderShapes {
			b.Run(fmt.Sprintf("n=%d/%dx%d", n, s.cols, s.rows), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(7, 7))
				m := randMatrix(rng, s.rows, s.cols)
				x := randVec(rng, n*s.cols)
				dst := make([]float32, n*s.rows)
				flop := 2 * float64(n*s.rows*s.cols)
				rate := measure(b, flop, func() { f(m, dst, x, n) })
				b.ReportMetric(rate, "cpu-GFLOP/s")
				b.ReportMetric(flop*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GFLOP/s")
			})
		}
	}
}

// measure runs call in b's loop on one locked thread and returns its
// GFLOP/s over that thread's CPU time (0 where that is not measured).
func measure(b *testing.B, flop float64, call func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	t0 := benchtest.ThreadCPU()
	for b.Loop() {
		call()
	}
	cpu := benchtest.ThreadCPU() - t0
	if cpu <= 0 {
		return 0
	}
	return flop * float64(b.N) / float64(cpu.Nanoseconds())
}

// BenchmarkMulT measures the path MulT takes on this machine.
func BenchmarkMulT(b *testing.B) {
	benchMulT(b, func(m *Matrix, dst, x []float32, n int) { m.MulT(dst, x, n) })
}

// BenchmarkMulTRef measures the element-by-element reference.
func BenchmarkMulTRef(b *testing.B) { benchMulT(b, mulTRef) }

// BenchmarkMulTGo measures the portable blocked path.
func BenchmarkMulTGo(b *testing.B) { benchMulT(b, mulTGo) }

// BenchmarkMulTSIMD measures each SIMD kernel this CPU runs.
func BenchmarkMulTSIMD(b *testing.B) {
	for _, k := range simdKernels() {
		b.Run(k.name, func(b *testing.B) { benchMulT(b, k.f) })
	}
}

// BenchmarkAttention reports GFLOP/s of MulABT and MulAB on attention's
// shapes (scores n×n over a head's depth; values n×depth over n pieces)
// for every kernel this machine runs.
func BenchmarkAttention(b *testing.B) {
	for _, fk := range floatKernels() {
		for _, n := range []int{12, 128} {
			for _, hd := range []int{64, 128} {
				rng := rand.New(rand.NewPCG(3, 3))
				q, k := randVec(rng, n*hd), randVec(rng, n*hd)
				p := randVec(rng, n*n)
				dst := make([]float32, n*max(n, hd))
				flop := 2 * float64(n*n*hd)
				b.Run(fmt.Sprintf("%s/ABT/n=%d/depth=%d", fk.name, n, hd), func(b *testing.B) {
					b.ReportMetric(measure(b, flop, func() { fk.abt(dst, q, k, n, n, hd) }), "cpu-GFLOP/s")
					b.ReportMetric(flop*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GFLOP/s")
				})
				b.Run(fmt.Sprintf("%s/AB/n=%d/depth=%d", fk.name, n, hd), func(b *testing.B) {
					b.ReportMetric(measure(b, flop, func() { fk.ab(dst, p, k, n, hd, n) }), "cpu-GFLOP/s")
					b.ReportMetric(flop*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GFLOP/s")
				})
			}
		}
	}
}
