package sentence

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/reverie-ai/reverie/internal/embed/sentence/qmat"
)

// TestInt8x2 checks that an int8x2 matrix computes with the sum of its two
// int8 matrices, for every row count up to maxPieces (its scratch).
func TestInt8x2(t *testing.T) {
	const rows, cols = 6, 8
	mk := func(seed int) *qmat.Matrix {
		m := &qmat.Matrix{Rows: rows, Cols: cols, Q: make([]int8, rows*cols), Scale: make([]float32, rows)}
		for k := range m.Q {
			m.Q[k] = int8((k*seed)%255 - 127)
		}
		for r := range m.Scale {
			m.Scale[r] = float32(r+seed) / 100
		}
		return m
	}
	a, e := mk(3), mk(7)
	q := &int8x2{m: a, err: e}
	for _, n := range []int{1, 5, maxPieces} {
		x := make([]float32, n*cols)
		for k := range x {
			x[k] = float32(k%13) - 6
		}
		got := make([]float32, n*rows)
		q.MulT(got, x, n)
		for i := 0; i < n; i++ {
			for r := 0; r < rows; r++ {
				var want float64
				for c := 0; c < cols; c++ {
					w := float64(a.Scale[r])*float64(a.Q[r*cols+c]) + float64(e.Scale[r])*float64(e.Q[r*cols+c])
					want += w * float64(x[i*cols+c])
				}
				if d := math.Abs(float64(got[i*rows+r]) - want); d > 1e-3*(1+math.Abs(want)) {
					t.Fatalf("n=%d [%d,%d] = %v, want %v", n, i, r, got[i*rows+r], want)
				}
			}
		}
	}
	row := make([]float32, cols)
	q.Row(row, 2)
	for c := range row {
		want := a.Scale[2]*float32(a.Q[2*cols+c]) + e.Scale[2]*float32(e.Q[2*cols+c])
		if math.Abs(float64(row[c]-want)) > 1e-5 {
			t.Fatalf("Row(2)[%d] = %v, want %v", c, row[c], want)
		}
	}
}

func TestParseWeightsRejects(t *testing.T) {
	for _, tc := range []struct{ name, blob string }{
		{"empty", ""},
		{"not ours", "GIF89a......."},
		{"truncated header", "USELITE1\x05\x00\x00\x00\x09embedding"},
		{"no tensors", "USELITE1\x00\x00\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseWeights(tc.blob); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// TestWeightsInPlace checks that the weights are views of the embedded
// blob, not copies (the binary's pages, not the heap), on a little-endian
// machine where the blob is aligned as the linker places it.
func TestWeightsInPlace(t *testing.T) {
	if !littleEndian {
		t.Skip("big-endian: the float32 sections are decoded into copies")
	}
	w, err := parseWeights(blob)
	if err != nil {
		t.Fatal(err)
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(blob)))
	hi := lo + uintptr(len(blob))
	inBlob := func(p unsafe.Pointer) bool { return uintptr(p) >= lo && uintptr(p) < hi }
	m := w.layers[1].ffn2.(*qmat.Matrix)
	for name, p := range map[string]unsafe.Pointer{
		"embedding values": unsafe.Pointer(&w.embedding.(*qmat.Matrix).Q[0]),
		"ffn2 values":      unsafe.Pointer(&m.Q[0]),
		"ffn2 scales":      unsafe.Pointer(&m.Scale[0]),
		"timing":           unsafe.Pointer(&w.timing[0]),
		"pool bias":        unsafe.Pointer(&w.poolB[0]),
	} {
		if !inBlob(p) {
			t.Errorf("%s: a copy, not a view of the blob", name)
		}
	}
}

// TestViewMisaligned checks the copy view makes of numbers not aligned for
// their type.
func TestViewMisaligned(t *testing.T) {
	b := make([]byte, 1+8*2)
	binary.LittleEndian.PutUint64(b[1:], math.Float64bits(-1.5))
	binary.LittleEndian.PutUint64(b[9:], math.Float64bits(2))
	if got := view[float64](b, 1, 2); !slices.Equal(got, []float64{-1.5, 2}) {
		t.Errorf("float64s: %v", got)
	}
	if got := view[uint32](b, 1, 2); got[0] != binary.LittleEndian.Uint32(b[1:]) || got[1] != binary.LittleEndian.Uint32(b[5:]) {
		t.Errorf("uint32s: %v", got)
	}
	if got := view[float32](b, 1, 2); got[0] != math.Float32frombits(binary.LittleEndian.Uint32(b[1:])) || got[1] != math.Float32frombits(binary.LittleEndian.Uint32(b[5:])) {
		t.Errorf("float32s: %v", got)
	}
	if got := view[uint16](b, 1, 1); got[0] != binary.LittleEndian.Uint16(b[1:]) {
		t.Errorf("uint16s: %v", got)
	}
}
