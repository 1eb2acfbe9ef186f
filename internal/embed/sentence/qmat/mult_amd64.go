//go:build !purego

package qmat

import "golang.org/x/sys/cpu"

//go:generate go run asm_gen.go

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		mulT = mulTAVX2
	}
}

// The mulAVX2xJ kernels (mult_amd64.s, written by asm_gen.go) multiply J
// activation rows starting at x, xstride float32 values apart, by pairs of
// int8 weight rows starting at q: pair p is the rows at q+2p·cols and
// q+(2p+1)·cols (both at q when cols is 0, pairs being 1). Over the first k
// columns (a positive multiple of 8) they set dst[j*dstride+2p+w] to
// scale[2p+w] times the dot product of activation row j and weight row
// 2p+w.

//go:noescape
func mulAVX2x1(q *int8, scale *float32, pairs, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX2x2(q *int8, scale *float32, pairs, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX2x3(q *int8, scale *float32, pairs, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX2x4(q *int8, scale *float32, pairs, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX2x5(q *int8, scale *float32, pairs, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX2x6(q *int8, scale *float32, pairs, cols, k int, x *float32, xstride int, dst *float32, dstride int)

// mulAVX2 runs the kernel for xr (1..6) activation rows.
func mulAVX2(xr int, q *int8, scale *float32, pairs, cols, k int, x *float32, xstride int, dst *float32, dstride int) {
	switch xr {
	case 6:
		mulAVX2x6(q, scale, pairs, cols, k, x, xstride, dst, dstride)
	case 5:
		mulAVX2x5(q, scale, pairs, cols, k, x, xstride, dst, dstride)
	case 4:
		mulAVX2x4(q, scale, pairs, cols, k, x, xstride, dst, dstride)
	case 3:
		mulAVX2x3(q, scale, pairs, cols, k, x, xstride, dst, dstride)
	case 2:
		mulAVX2x2(q, scale, pairs, cols, k, x, xstride, dst, dstride)
	default:
		mulAVX2x1(q, scale, pairs, cols, k, x, xstride, dst, dstride)
	}
}

// mulTAVX2 is the AVX2+FMA kernel. For each block of six activation rows
// (kept in L1 cache while every weight row streams past them) one assembly
// call runs all pairs of weight rows; an odd last row runs as a pair of
// itself into a scratch, and columns past the last multiple of 8 are added
// in Go.
func mulTAVX2(m *Matrix, dst, x []float32, n int) {
	rows, cols := m.Rows, m.Cols
	k8 := cols &^ 7
	if k8 == 0 {
		mulTGo(m, dst, x, n)
		return
	}
	pairs := rows / 2
	for i := 0; i < n; i += 6 {
		xr := min(6, n-i)
		if pairs > 0 {
			mulAVX2(xr, &m.Q[0], &m.Scale[0], pairs, cols, k8, &x[i*cols], cols, &dst[i*rows], rows)
		}
		if rows%2 == 1 {
			r := rows - 1
			s := [2]float32{m.Scale[r], m.Scale[r]}
			var out [12]float32
			mulAVX2(xr, &m.Q[r*cols], &s[0], 1, 0, k8, &x[i*cols], cols, &out[0], 2)
			for j := range xr {
				dst[(i+j)*rows+r] = out[2*j]
			}
		}
		if k8 < cols {
			for j := range xr {
				xj := x[(i+j)*cols+k8 : (i+j+1)*cols]
				for r := range rows {
					q := m.Q[r*cols+k8 : (r+1)*cols]
					var a float32
					for c, v := range xj {
						a += v * float32(q[c])
					}
					dst[(i+j)*rows+r] += a * m.Scale[r]
				}
			}
		}
	}
}
