package qmat

// goBlock is how many columns of a weight row mulTGo dequantises at a time
// into its stack scratch.
const goBlock = 512

// mulTGo is the portable kernel: it dequantises two weight rows at a time,
// goBlock columns at a time, into a stack scratch and dots them against
// four activation rows at once with eight independent accumulators, so each
// int8 is converted once per call rather than once per activation row and
// the float additions do not wait on each other.
func mulTGo(m *Matrix, dst, x []float32, n int) {
	rows, cols := m.Rows, m.Cols
	var w [2][goBlock]float32
	r := 0
	for ; r+2 <= rows; r += 2 {
		for k0 := 0; k0 < cols; k0 += goBlock {
			kl := min(goBlock, cols-k0)
			w0, w1 := w[0][:kl], w[1][:kl]
			q0 := m.Q[r*cols+k0 : r*cols+k0+kl]
			q1 := m.Q[(r+1)*cols+k0 : (r+1)*cols+k0+kl]
			for c := range w0 {
				w0[c] = float32(q0[c])
				w1[c] = float32(q1[c])
			}
			i := 0
			for ; i+4 <= n; i += 4 {
				x0 := x[i*cols+k0 : i*cols+k0+kl]
				x1 := x[(i+1)*cols+k0 : (i+1)*cols+k0+kl]
				x2 := x[(i+2)*cols+k0 : (i+2)*cols+k0+kl]
				x3 := x[(i+3)*cols+k0 : (i+3)*cols+k0+kl]
				x0, x1, x2, x3 = x0[:len(w0)], x1[:len(w0)], x2[:len(w0)], x3[:len(w0)]
				var s00, s01, s10, s11, s20, s21, s30, s31 float32
				for c, a := range w0 {
					b := w1[c]
					v0, v1, v2, v3 := x0[c], x1[c], x2[c], x3[c]
					s00 += v0 * a
					s01 += v0 * b
					s10 += v1 * a
					s11 += v1 * b
					s20 += v2 * a
					s21 += v2 * b
					s30 += v3 * a
					s31 += v3 * b
				}
				store2(dst[i*rows+r:], s00, s01, k0)
				store2(dst[(i+1)*rows+r:], s10, s11, k0)
				store2(dst[(i+2)*rows+r:], s20, s21, k0)
				store2(dst[(i+3)*rows+r:], s30, s31, k0)
			}
			for ; i < n; i++ {
				// The order of the four-row loop, so that a row of x gets
				// the same sums, bit for bit, wherever it falls.
				xi := x[i*cols+k0 : i*cols+k0+kl]
				xi, w1 := xi[:len(w0)], w1[:len(w0)]
				var s0, s1 float32
				for c, a := range w0 {
					v := xi[c]
					s0 += v * a
					s1 += v * w1[c]
				}
				store2(dst[i*rows+r:], s0, s1, k0)
			}
		}
		s0, s1 := m.Scale[r], m.Scale[r+1]
		for i := 0; i < n; i++ {
			d := dst[i*rows+r : i*rows+r+2]
			d[0] *= s0
			d[1] *= s1
		}
	}
	if r < rows {
		row := m.Q[r*cols : (r+1)*cols]
		s := m.Scale[r]
		for i := 0; i < n; i++ {
			xi := x[i*cols : (i+1)*cols]
			var a0, a1, a2, a3 float32
			c := 0
			for ; c+4 <= len(row); c += 4 {
				q, v := row[c:c+4], xi[c:c+4]
				a0 += v[0] * float32(q[0])
				a1 += v[1] * float32(q[1])
				a2 += v[2] * float32(q[2])
				a3 += v[3] * float32(q[3])
			}
			for ; c < len(row); c++ {
				a0 += xi[c] * float32(row[c])
			}
			dst[i*rows+r] = ((a0 + a1) + (a2 + a3)) * s
		}
	}
}

// store2 sets d[0], d[1] to a, b on a row's first block of columns and adds
// them on the later ones.
func store2(d []float32, a, b float32, k0 int) {
	d = d[:2]
	if k0 == 0 {
		d[0], d[1] = a, b
		return
	}
	d[0] += a
	d[1] += b
}
