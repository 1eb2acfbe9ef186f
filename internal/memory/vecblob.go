package memory

import (
	"encoding/binary"
	"fmt"
	"math"

	vec "github.com/reverie-ai/reverie/internal/embed"
)

// A memory's vector is stored compact (memories.embedding and
// memory_pending_embeddings.embedding): exactly the int8 quantisation the
// in-memory index ranks with (quantise), so loading the index copies the
// stored codes and scale instead of quantising again, and recall ranks the
// same whether a vector was indexed as it was made or read back after a
// restart. A 512-dimension vector takes 518 bytes instead of 2,048 of
// float32, and a memory's row fits several to a 4 KB page again.
//
// The layout, for a vector of n dimensions:
//
//	byte 0         compactTag | P (P = 0 or 1, the padding's length)
//	bytes 1..4     the scale, a little-endian float32 (quantise's max|v|/127)
//	bytes 5..4+n   the n codes, int8: round(v[i]/scale), in -127..127; the
//	               code -128 (posZero) is a component that rounds to 0 but
//	               is positive, so that the index's sign sketch (v[i] > 0)
//	               is rebuilt exactly
//	P bytes        zero
//
// P is 1 when 5+n is a multiple of 4, so a compact vector's length never
// is: a length that is a multiple of 4 is a vector of the float32 format
// stores wrote before migration 010 (vec.Encode), read as it was until
// the store converts it (compact.go).
//
// Readers that want floats (Get, AllVectors: dreaming's cosines) get
// code·scale for each component: within scale/2 (≈ max|v|/254) of the
// vector that was stored.
const (
	compactTag    = 0x10
	compactHeader = 5
	posZero       = math.MinInt8
)

// encodeVector returns v's compact form (see above).
func encodeVector(v []float32) []byte {
	n := len(v)
	pad := 0
	if (compactHeader+n)%4 == 0 {
		pad = 1
	}
	b := make([]byte, compactHeader+n+pad)
	codes := bytesAsInt8s(b[compactHeader : compactHeader+n])
	scale := quantise(v, codes)
	for i, x := range v {
		if codes[i] == 0 && x > 0 {
			codes[i] = posZero
		}
	}
	b[0] = compactTag | byte(pad)
	binary.LittleEndian.PutUint32(b[1:], math.Float32bits(scale))
	return b
}

// storedVector is a stored vector as read: compact codes and their scale,
// or the floats of the legacy format.
type storedVector struct {
	codes  []int8 // compact: the codes, posZero included; a view of the blob
	scale  float32
	floats []float32 // legacy float32 format
}

// dims returns the vector's number of dimensions.
func (sv storedVector) dims() int {
	if sv.floats != nil {
		return len(sv.floats)
	}
	return len(sv.codes)
}

// decodeVector parses a stored vector of either format. A compact vector's
// codes are a view of b (valid while b is); a legacy one is decoded into
// buf's array when it is large enough.
func decodeVector(b []byte, buf []float32) (storedVector, error) {
	if len(b)%4 == 0 {
		v, err := vec.DecodeInto(buf, b)
		if err != nil {
			return storedVector{}, err
		}
		return storedVector{floats: v}, nil
	}
	if len(b) < compactHeader || b[0]&^1 != compactTag {
		return storedVector{}, fmt.Errorf("decode vector of %d bytes: not a stored vector: %w", len(b), vec.ErrDimensions)
	}
	pad := int(b[0] & 1)
	n := len(b) - compactHeader - pad
	if n < 0 || (pad == 1) != ((compactHeader+n)%4 == 0) || (pad == 1 && b[len(b)-1] != 0) {
		return storedVector{}, fmt.Errorf("decode vector of %d bytes: bad padding: %w", len(b), vec.ErrDimensions)
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b[1:]))
	return storedVector{codes: bytesAsInt8s(b[compactHeader : compactHeader+n]), scale: scale}, nil
}

// float32s returns the vector's components: the legacy floats, or each
// code times the scale (posZero as 0). The result is a new slice unless
// the vector is legacy.
func (sv storedVector) float32s() []float32 {
	if sv.floats != nil {
		return sv.floats
	}
	out := make([]float32, len(sv.codes))
	for i, c := range sv.codes {
		if c != posZero {
			out[i] = float32(c) * sv.scale
		}
	}
	return out
}

// decodeFloats parses a stored vector of either format into new floats (see
// storedVector.float32s).
func decodeFloats(b []byte) ([]float32, error) {
	sv, err := decodeVector(b, nil)
	if err != nil {
		return nil, err
	}
	return sv.float32s(), nil
}
