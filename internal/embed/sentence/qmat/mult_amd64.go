//go:build !purego

package qmat

import "golang.org/x/sys/cpu"

//go:generate go run asm_gen.go

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		mulT = mulTAVX2
	}
}

// The dotAVX2xJ kernels (mult_amd64.s, written by asm_gen.go) dot the int8
// weight rows q0 and q1 against J activation rows starting at x, xstride
// float32 values apart, over k columns (a positive multiple of 8), and set
// out[2j+w] to the sum of activation row j times weight row w.

//go:noescape
func dotAVX2x1(q0, q1 *int8, x *float32, xstride, k int, out *float32)

//go:noescape
func dotAVX2x2(q0, q1 *int8, x *float32, xstride, k int, out *float32)

//go:noescape
func dotAVX2x3(q0, q1 *int8, x *float32, xstride, k int, out *float32)

//go:noescape
func dotAVX2x4(q0, q1 *int8, x *float32, xstride, k int, out *float32)

//go:noescape
func dotAVX2x5(q0, q1 *int8, x *float32, xstride, k int, out *float32)

//go:noescape
func dotAVX2x6(q0, q1 *int8, x *float32, xstride, k int, out *float32)

// mulTAVX2 is the AVX2+FMA kernel: for each block of six activation rows
// (kept in L1 cache while every weight row streams past them), it runs a
// micro-kernel per pair of weight rows, then adds the columns past the last
// multiple of 8 and applies the rows' scales.
func mulTAVX2(m *Matrix, dst, x []float32, n int) {
	rows, cols := m.Rows, m.Cols
	k8 := cols &^ 7
	var out [12]float32
	for i := 0; i < n; i += 6 {
		xr := min(6, n-i)
		xi := &x[i*cols]
		for r := 0; r < rows; r += 2 {
			r1 := min(r+1, rows-1) // an odd last row is computed twice, stored once
			q0, q1 := m.Q[r*cols:(r+1)*cols], m.Q[r1*cols:(r1+1)*cols]
			if k8 > 0 {
				switch xr {
				case 6:
					dotAVX2x6(&q0[0], &q1[0], xi, cols, k8, &out[0])
				case 5:
					dotAVX2x5(&q0[0], &q1[0], xi, cols, k8, &out[0])
				case 4:
					dotAVX2x4(&q0[0], &q1[0], xi, cols, k8, &out[0])
				case 3:
					dotAVX2x3(&q0[0], &q1[0], xi, cols, k8, &out[0])
				case 2:
					dotAVX2x2(&q0[0], &q1[0], xi, cols, k8, &out[0])
				default:
					dotAVX2x1(&q0[0], &q1[0], xi, cols, k8, &out[0])
				}
			} else {
				clear(out[:])
			}
			s0, s1 := m.Scale[r], m.Scale[r1]
			for j := range xr {
				a, b := out[2*j], out[2*j+1]
				xj := x[(i+j)*cols : (i+j+1)*cols]
				for c := k8; c < cols; c++ {
					a += xj[c] * float32(q0[c])
					b += xj[c] * float32(q1[c])
				}
				d := dst[(i+j)*rows:]
				d[r] = a * s0
				if r1 > r {
					d[r1] = b * s1
				}
			}
		}
	}
}
