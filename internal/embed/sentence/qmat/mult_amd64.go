//go:build !purego

package qmat

import "golang.org/x/sys/cpu"

//go:generate go run asm_gen.go

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		mulT = mulTAVX2
		mulABT = mulABTAVX2
		mulAB = mulABAVX2
		if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL {
			mulT = mulTAVX512
		}
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
	for i := 0; i < n; i += 6 {
		xr := min(6, n-i)
		avx2Rows(m, 0, k8, dst, x, i, xr)
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

// avx2Rows sets dst's rows i..i+xr-1 (xr ≤ 6), columns r0 to m.Rows-1, to
// the scaled products of x's rows i..i+xr-1 and m's rows r0.. over their
// first k columns (a positive multiple of 8).
func avx2Rows(m *Matrix, r0, k int, dst, x []float32, i, xr int) {
	rows, cols := m.Rows, m.Cols
	if pairs := (rows - r0) / 2; pairs > 0 {
		mulAVX2(xr, &m.Q[r0*cols], &m.Scale[r0], pairs, cols, k, &x[i*cols], cols, &dst[i*rows+r0], rows)
	}
	if (rows-r0)%2 == 1 {
		r := rows - 1
		s := [2]float32{m.Scale[r], m.Scale[r]}
		var out [12]float32
		mulAVX2(xr, &m.Q[r*cols], &s[0], 1, 0, k, &x[i*cols], cols, &out[0], 2)
		for j := range xr {
			dst[(i+j)*rows+r] = out[2*j]
		}
	}
}

// The mulAVX512xJ kernels are the AVX-512 counterparts of mulAVX2xJ: they
// take groups of four weight rows, cols apart, and k a positive multiple
// of 16, and set dst[j*dstride+4g+w] for activation row j and weight row w
// of group g.

//go:noescape
func mulAVX512x1(q *int8, scale *float32, groups, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX512x2(q *int8, scale *float32, groups, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX512x3(q *int8, scale *float32, groups, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX512x4(q *int8, scale *float32, groups, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX512x5(q *int8, scale *float32, groups, cols, k int, x *float32, xstride int, dst *float32, dstride int)

//go:noescape
func mulAVX512x6(q *int8, scale *float32, groups, cols, k int, x *float32, xstride int, dst *float32, dstride int)

// mulAVX512x12 is mulAVX2x6's layout for twelve activation rows with
// sixteen columns at a time: pairs of weight rows, cols apart, k a positive
// multiple of 16.
//
//go:noescape
func mulAVX512x12(q *int8, scale *float32, pairs, cols, k int, x *float32, xstride int, dst *float32, dstride int)

// mulAVX512 runs the kernel for xr (1..6) activation rows.
func mulAVX512(xr int, q *int8, scale *float32, groups, cols, k int, x *float32, xstride int, dst *float32, dstride int) {
	switch xr {
	case 6:
		mulAVX512x6(q, scale, groups, cols, k, x, xstride, dst, dstride)
	case 5:
		mulAVX512x5(q, scale, groups, cols, k, x, xstride, dst, dstride)
	case 4:
		mulAVX512x4(q, scale, groups, cols, k, x, xstride, dst, dstride)
	case 3:
		mulAVX512x3(q, scale, groups, cols, k, x, xstride, dst, dstride)
	case 2:
		mulAVX512x2(q, scale, groups, cols, k, x, xstride, dst, dstride)
	default:
		mulAVX512x1(q, scale, groups, cols, k, x, xstride, dst, dstride)
	}
}

// mulTAVX512 is the AVX-512 kernel: like mulTAVX2 with sixteen columns and
// four weight rows at a time; the last rows short of a group of four run
// on the AVX2 kernel. For widths up to 768 it takes twelve activation rows
// at a time while it can. Matrices whose columns are not a multiple of 16 take
// mulTAVX2.
func mulTAVX512(m *Matrix, dst, x []float32, n int) {
	rows, cols := m.Rows, m.Cols
	groups := rows / 4
	if cols%16 != 0 || groups == 0 {
		mulTAVX2(m, dst, x, n)
		return
	}
	i := 0
	if cols <= 768 {
		// Twelve rows of activations (at most 36 KiB) stay in L1: run
		// pairs of weight rows against them, which widens half as many
		// weights per multiply-add as the six-row kernel.
		for ; i+12 <= n; i += 12 {
			// The same weight rows as below, so that a row of x gets the
			// same sums, bit for bit, in either kernel.
			mulAVX512x12(&m.Q[0], &m.Scale[0], 2*groups, cols, cols, &x[i*cols], cols, &dst[i*rows], rows)
			if 4*groups < rows {
				avx2Rows(m, 4*groups, cols, dst, x, i, 6)
				avx2Rows(m, 4*groups, cols, dst, x, i+6, 6)
			}
		}
	}
	for ; i < n; i += 6 {
		xr := min(6, n-i)
		mulAVX512(xr, &m.Q[0], &m.Scale[0], groups, cols, cols, &x[i*cols], cols, &dst[i*rows], rows)
		if 4*groups < rows {
			avx2Rows(m, 4*groups, cols, dst, x, i, xr)
		}
	}
}

// The abtAVX2xJ kernels are mulAVX2xJ for float32 rows of b (pairs of
// them, bstride apart; both at b when bstride is 0, pairs being 1) and no
// scales: over the first k columns (a positive multiple of 8) they set
// dst[j*dstride+2p+w] to the dot product of row j of a (astride apart) and
// row 2p+w of b.

//go:noescape
func abtAVX2x1(b *float32, pairs, bstride, k int, a *float32, astride int, dst *float32, dstride int)

//go:noescape
func abtAVX2x2(b *float32, pairs, bstride, k int, a *float32, astride int, dst *float32, dstride int)

//go:noescape
func abtAVX2x3(b *float32, pairs, bstride, k int, a *float32, astride int, dst *float32, dstride int)

//go:noescape
func abtAVX2x4(b *float32, pairs, bstride, k int, a *float32, astride int, dst *float32, dstride int)

//go:noescape
func abtAVX2x5(b *float32, pairs, bstride, k int, a *float32, astride int, dst *float32, dstride int)

//go:noescape
func abtAVX2x6(b *float32, pairs, bstride, k int, a *float32, astride int, dst *float32, dstride int)

// abtAVX2 runs the kernel for xr (1..6) rows of a.
func abtAVX2(xr int, b *float32, pairs, bstride, k int, a *float32, astride int, dst *float32, dstride int) {
	switch xr {
	case 6:
		abtAVX2x6(b, pairs, bstride, k, a, astride, dst, dstride)
	case 5:
		abtAVX2x5(b, pairs, bstride, k, a, astride, dst, dstride)
	case 4:
		abtAVX2x4(b, pairs, bstride, k, a, astride, dst, dstride)
	case 3:
		abtAVX2x3(b, pairs, bstride, k, a, astride, dst, dstride)
	case 2:
		abtAVX2x2(b, pairs, bstride, k, a, astride, dst, dstride)
	default:
		abtAVX2x1(b, pairs, bstride, k, a, astride, dst, dstride)
	}
}

// mulABTAVX2 is a · bᵀ in the layout of mulTAVX2: six rows of a at a time
// against pairs of rows of b, an odd last row of b paired with itself into
// a scratch, columns past the last multiple of 8 added in Go.
func mulABTAVX2(dst, a, b []float32, n, m, k int) {
	k8 := k &^ 7
	if k8 == 0 {
		mulABTGo(dst, a, b, n, m, k)
		return
	}
	for i := 0; i < n; i += 6 {
		xr := min(6, n-i)
		if pairs := m / 2; pairs > 0 {
			abtAVX2(xr, &b[0], pairs, k, k8, &a[i*k], k, &dst[i*m], m)
		}
		if m%2 == 1 {
			j := m - 1
			var out [12]float32
			abtAVX2(xr, &b[j*k], 1, 0, k8, &a[i*k], k, &out[0], 2)
			for r := range xr {
				dst[(i+r)*m+j] = out[2*r]
			}
		}
		if k8 < k {
			for r := range xr {
				ar := a[(i+r)*k+k8 : (i+r+1)*k]
				for j := range m {
					dst[(i+r)*m+j] += Dot(ar, b[j*k+k8:(j+1)*k])
				}
			}
		}
	}
}

// The abAVX2xJ kernels set dst = a · b for J rows of a (astride apart,
// dst's dstride apart) over k rows of b (bstride apart, k positive) and
// blocks·16 columns of b and dst.

//go:noescape
func abAVX2x1(a *float32, astride, k int, b *float32, bstride, blocks int, dst *float32, dstride int)

//go:noescape
func abAVX2x2(a *float32, astride, k int, b *float32, bstride, blocks int, dst *float32, dstride int)

//go:noescape
func abAVX2x3(a *float32, astride, k int, b *float32, bstride, blocks int, dst *float32, dstride int)

//go:noescape
func abAVX2x4(a *float32, astride, k int, b *float32, bstride, blocks int, dst *float32, dstride int)

//go:noescape
func abAVX2x5(a *float32, astride, k int, b *float32, bstride, blocks int, dst *float32, dstride int)

//go:noescape
func abAVX2x6(a *float32, astride, k int, b *float32, bstride, blocks int, dst *float32, dstride int)

// abAVX2 runs the kernel for xr (1..6) rows of a.
func abAVX2(xr int, a *float32, astride, k int, b *float32, bstride, blocks int, dst *float32, dstride int) {
	switch xr {
	case 6:
		abAVX2x6(a, astride, k, b, bstride, blocks, dst, dstride)
	case 5:
		abAVX2x5(a, astride, k, b, bstride, blocks, dst, dstride)
	case 4:
		abAVX2x4(a, astride, k, b, bstride, blocks, dst, dstride)
	case 3:
		abAVX2x3(a, astride, k, b, bstride, blocks, dst, dstride)
	case 2:
		abAVX2x2(a, astride, k, b, bstride, blocks, dst, dstride)
	default:
		abAVX2x1(a, astride, k, b, bstride, blocks, dst, dstride)
	}
}

// mulABAVX2 is a · b six rows of a and sixteen columns of b at a time;
// columns past the last multiple of 16 are done in Go.
func mulABAVX2(dst, a, b []float32, n, m, k int) {
	blocks := m / 16
	for i := 0; i < n; i += 6 {
		xr := min(6, n-i)
		if blocks > 0 {
			abAVX2(xr, &a[i*k], k, k, &b[0], m, blocks, &dst[i*m], m)
		}
		if m16 := 16 * blocks; m16 < m {
			for r := range xr {
				d := dst[(i+r)*m+m16 : (i+r+1)*m]
				clear(d)
				for l := range k {
					Axpy(d, b[l*m+m16:(l+1)*m], a[(i+r)*k+l])
				}
			}
		}
	}
}
