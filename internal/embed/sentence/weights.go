package sentence

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/reverie-ai/reverie/internal/embed/sentence/qmat"
)

// blob is use-lite.bin (see ./internal/gen for its layout), read in place.
//
//go:embed use-lite.bin
var blob string

// linear is a weight matrix with one row per output unit: qmat.Matrix, or
// a float32 matrix when a development blob holds float32 weights.
type linear interface {
	MulT(dst, x []float32, n int)
	Row(dst []float32, r int)
}

// f32Matrix is a float32 weight matrix (development blobs only).
type f32Matrix struct {
	rows, cols int
	w          []float32
}

func (m *f32Matrix) MulT(dst, x []float32, n int) {
	_ = dst[n*m.rows-1]
	for i := 0; i < n; i++ {
		xi := x[i*m.cols : (i+1)*m.cols]
		for r := 0; r < m.rows; r++ {
			dst[i*m.rows+r] = qmat.Dot(xi, m.w[r*m.cols:(r+1)*m.cols])
		}
	}
}

func (m *f32Matrix) Row(dst []float32, r int) { copy(dst, m.w[r*m.cols:(r+1)*m.cols]) }

// int8Size is the size in the blob of an int8 rows×cols matrix.
func int8Size(rows, cols int) int { return 4*rows + rows*cols }

// int8x2 is a weight matrix held as an int8 matrix plus its rounding error
// as another (go run ./internal/gen -int8x2): float32's precision for
// twice the size and multiplications.
type int8x2 struct {
	m, err *qmat.Matrix
	tmp    sync.Pool // *[]float32, maxPieces × m.Rows
}

func (q *int8x2) MulT(dst, x []float32, n int) {
	q.m.MulT(dst, x, n)
	p, _ := q.tmp.Get().(*[]float32)
	if p == nil {
		b := make([]float32, maxPieces*q.m.Rows)
		p = &b
	}
	defer q.tmp.Put(p)
	if len(*p) < n*q.m.Rows {
		*p = make([]float32, n*q.m.Rows)
	}
	e := (*p)[:n*q.m.Rows]
	q.err.MulT(e, x, n)
	for k, v := range e {
		dst[k] += v
	}
}

func (q *int8x2) Row(dst []float32, r int) {
	q.m.Row(dst, r)
	for c, v := range q.err.Q[r*q.err.Cols : (r+1)*q.err.Cols] {
		dst[c] += q.err.Scale[r] * float32(v)
	}
}

// layer is one transformer layer's weights.
type layer struct {
	dim              int // its input width: 256, then 512
	ln1g, ln1b       []float32
	qkv              linear // 3·dim × dim
	qkvB             []float32
	out              linear // 512 × dim
	outB             []float32
	res              linear // 512 × 256 (layer 0 only: widens the residual)
	resB             []float32
	ln2g, ln2b       []float32
	ffn1, ffn2       linear // 1536 × 512, 512 × 1536
	ffn1B, ffn2B     []float32
	heads, headDepth int
	scale            float32 // the queries' scale, 1/√headDepth as the graph stores it
}

// weights are the model's parameters, viewing the blob.
type weights struct {
	embedding linear    // 8002 × 256
	timing    []float32 // maxPieces × 256: each position's timing signal
	layers    [2]layer
	pool      linear // 512 × 512
	poolB     []float32
}

type entry struct {
	kind            byte
	rows, cols, off int
}

// littleEndian reports whether the machine stores numbers as the blob does,
// so that its float32 sections can be viewed rather than decoded.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// view returns the n little-endian numbers at b[off:]: the bytes
// themselves when the machine is little-endian and they are aligned for
// T, else a decoded copy.
func view[T uint16 | uint32 | float32 | float64](b []byte, off, n int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	_ = b[off+size*n-1]
	ptr := unsafe.Pointer(&b[off])
	if littleEndian && uintptr(ptr)%uintptr(size) == 0 {
		return unsafe.Slice((*T)(ptr), n)
	}
	v := make([]T, n)
	for k := range v {
		switch x := any(&v[k]).(type) {
		case *uint16:
			*x = binary.LittleEndian.Uint16(b[off+2*k:])
		case *uint32:
			*x = binary.LittleEndian.Uint32(b[off+4*k:])
		case *float32:
			*x = math.Float32frombits(binary.LittleEndian.Uint32(b[off+4*k:]))
		case *float64:
			*x = math.Float64frombits(binary.LittleEndian.Uint64(b[off+8*k:]))
		}
	}
	return v
}

// parseWeights views data (use-lite.bin's layout) as the model's weights.
// Float32 sections are viewed in place when aligned and little-endian, and
// decoded into a copy otherwise; int8 sections are always viewed.
func parseWeights(data string) (*weights, error) {
	if len(data) < 12 || data[:8] != "USELITE1" {
		return nil, fmt.Errorf("weights: not a USE-lite blob")
	}
	b := unsafe.Slice(unsafe.StringData(data), len(data))
	n := int(binary.LittleEndian.Uint32(b[8:]))
	p := 12
	entries := map[string]entry{}
	for range n {
		if p >= len(b) {
			return nil, fmt.Errorf("weights: header truncated")
		}
		l := int(b[p])
		if p+1+l+13 > len(b) {
			return nil, fmt.Errorf("weights: header truncated")
		}
		name := string(b[p+1 : p+1+l])
		p += 1 + l
		e := entry{
			kind: b[p],
			rows: int(binary.LittleEndian.Uint32(b[p+1:])),
			cols: int(binary.LittleEndian.Uint32(b[p+5:])),
			off:  int(binary.LittleEndian.Uint32(b[p+9:])),
		}
		p += 13
		size := 4 * e.rows * e.cols
		switch e.kind {
		case 1:
			size = int8Size(e.rows, e.cols)
		case 3:
			size = (int8Size(e.rows, e.cols)+3)/4*4 + int8Size(e.rows, e.cols)
		}
		if e.off < 0 || e.off+size > len(b) {
			return nil, fmt.Errorf("weights: %s out of the blob", name)
		}
		entries[name] = e
	}
	floats := func(off, n int) []float32 { return view[float32](b, off, n) }
	var errs []error
	vec := func(name string, n int) []float32 {
		e, ok := entries[name]
		if !ok || e.kind != 0 || e.rows*e.cols != n {
			errs = append(errs, fmt.Errorf("weights: vector %s missing or not %d long", name, n))
			return make([]float32, n)
		}
		return floats(e.off, n)
	}
	mat := func(name string, rows, cols int) linear {
		e, ok := entries[name]
		if !ok || e.rows != rows || e.cols != cols {
			errs = append(errs, fmt.Errorf("weights: matrix %s missing or not %d×%d", name, rows, cols))
			return &f32Matrix{rows: rows, cols: cols, w: make([]float32, rows*cols)}
		}
		int8At := func(off int) *qmat.Matrix {
			return &qmat.Matrix{Rows: rows, Cols: cols,
				Scale: floats(off, rows),
				Q:     unsafe.Slice((*int8)(unsafe.Pointer(&b[off+4*rows])), rows*cols)}
		}
		switch e.kind {
		case 1:
			return int8At(e.off)
		case 3:
			return &int8x2{m: int8At(e.off), err: int8At(e.off + (int8Size(rows, cols)+3)/4*4)}
		case 2:
			return &f32Matrix{rows: rows, cols: cols, w: floats(e.off, rows*cols)}
		}
		errs = append(errs, fmt.Errorf("weights: %s has kind %d", name, e.kind))
		return &f32Matrix{rows: rows, cols: cols, w: make([]float32, rows*cols)}
	}
	w := &weights{
		embedding: mat("embedding", embeddingRows, 256),
		timing:    vec("timing", maxPieces*256),
		pool:      mat("pool", Dimensions, Dimensions),
		poolB:     vec("pool.b", Dimensions),
	}
	for l, d := range []int{256, 512} {
		p := fmt.Sprintf("l%d.", l)
		ly := &w.layers[l]
		ly.dim = d
		ly.heads = 4
		ly.headDepth = d / 4
		ly.scale = float32(1 / math.Sqrt(float64(ly.headDepth)))
		ly.ln1g, ly.ln1b = vec(p+"ln1.g", d), vec(p+"ln1.b", d)
		ly.qkv, ly.qkvB = mat(p+"qkv", 3*d, d), vec(p+"qkv.b", 3*d)
		ly.out, ly.outB = mat(p+"out", 512, d), vec(p+"out.b", 512)
		if l == 0 {
			ly.res, ly.resB = mat(p+"res", 512, 256), vec(p+"res.b", 512)
		}
		ly.ln2g, ly.ln2b = vec(p+"ln2.g", 512), vec(p+"ln2.b", 512)
		ly.ffn1, ly.ffn1B = mat(p+"ffn1", 1536, 512), vec(p+"ffn1.b", 1536)
		ly.ffn2, ly.ffn2B = mat(p+"ffn2", 512, 1536), vec(p+"ffn2.b", 512)
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return w, nil
}
