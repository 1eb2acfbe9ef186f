package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/sentence"
)

// indexEntry is one slot of an index as recall reads it.
type indexEntry struct {
	q         []int8
	scale     float32
	sign      []uint64
	hasVector bool
}

func entryOf(x *index, id int64) indexEntry {
	s, ok := x.slotOf(id)
	if !ok {
		return indexEntry{}
	}
	return indexEntry{q: slices.Clone(x.q[s*x.dims : (s+1)*x.dims]), scale: x.scale[s],
		sign: slices.Clone(x.sign[s*x.words : (s+1)*x.words]), hasVector: x.metas[s].hasVector}
}

func (e indexEntry) equal(o indexEntry) bool {
	return slices.Equal(e.q, o.q) && math.Float32bits(e.scale) == math.Float32bits(o.scale) &&
		slices.Equal(e.sign, o.sign) && e.hasVector == o.hasVector
}

// checkStoredForm checks that v's compact form is what the index holds of
// v, byte for byte, once loaded, that it is not mistaken for the float32
// format, and that its floats are within half a step of v.
func checkStoredForm(t *testing.T, name string, v []float32) {
	t.Helper()
	b := encodeVector(v)
	if len(b)%4 == 0 {
		t.Fatalf("%s: compact vector of %d bytes: a multiple of 4 reads as float32", name, len(b))
	}
	sv, err := decodeVector(b, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if sv.floats != nil || sv.dims() != len(v) {
		t.Fatalf("%s: decoded %d dimensions (floats %v), want %d compact", name, sv.dims(), sv.floats != nil, len(v))
	}
	made, loaded := newIndex(len(v)), newIndex(len(v))
	made.put(1, meta{}, v)
	loaded.putCodes(1, meta{}, sv.codes, sv.scale)
	if a, b := entryOf(made, 1), entryOf(loaded, 1); !a.equal(b) {
		t.Fatalf("%s: the index entry loaded from the stored form differs from the one made of the vector:\nmade   %+v\nloaded %+v", name, a, b)
	}
	fs := sv.float32s()
	for i := range v {
		if d := math.Abs(float64(fs[i] - v[i])); d > float64(sv.scale)*(0.5+1e-4) {
			t.Fatalf("%s: component %d is %v stored as %v (step %v)", name, i, v[i], fs[i], sv.scale)
		}
	}
}

func TestVectorStoredForm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dense := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		embed.Normalize(v)
		return v
	}
	hashing, err := embed.NewOffline(0).Embed(context.Background(), []string{"We bought a car last week", "ok"})
	if err != nil {
		t.Fatal(err)
	}
	tiny := dense(64)
	tiny[3], tiny[9], tiny[10] = 1e-6, -1e-6, 0 // round to 0: a positive, a negative, a zero
	for _, tc := range []struct {
		name string
		v    []float32
	}{
		{"512 dense (the sentence encoder's size)", dense(512)},
		{"384 hashing, mostly zeros", hashing[0]},
		{"384 hashing, short text", hashing[1]},
		{"1536 dense (a remote model)", dense(1536)},
		{"3 dimensions: padded", dense(3)},
		{"7 dimensions: padded", dense(7)},
		{"511 dimensions: padded", dense(511)},
		{"1 dimension", []float32{-1}},
		{"components rounding to zero", tiny},
		{"all zero", make([]float32, 16)},
		{"not normalised", []float32{3, -40, 0.5, 1000}},
		{"empty", []float32{}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkStoredForm(t, tc.name, tc.v) })
	}
}

func TestVectorStoredFormLegacy(t *testing.T) {
	v := []float32{0.5, -0.25, 0, 0.125}
	sv, err := decodeVector(embed.Encode(v), nil)
	if err != nil || !slices.Equal(sv.floats, v) || sv.dims() != 4 {
		t.Fatalf("a float32 vector decodes to %+v, %v", sv, err)
	}
	got, err := decodeFloats(embed.Encode(v))
	if err != nil || !slices.Equal(got, v) {
		t.Fatalf("decodeFloats of a float32 vector = %v, %v", got, err)
	}
}

func TestVectorStoredFormRejects(t *testing.T) {
	padded := encodeVector([]float32{0.1, 0.2, 0.3}) // 5+3 bytes: one of padding
	unpadded := encodeVector([]float32{0.1, 0.2})    // 5+2 bytes
	flagged := slices.Clone(unpadded)
	flagged[0] |= 1
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"too short", []byte{compactTag, 0, 0}},
		{"unknown tag", append([]byte{0x20}, padded[1:]...)},
		{"padding not zero", append(slices.Clone(padded[:len(padded)-1]), 7)},
		{"padding flagged where none is due", flagged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.b)%4 == 0 {
				t.Fatalf("a case of %d bytes reads as float32", len(tc.b))
			}
			if _, err := decodeVector(tc.b, nil); !errors.Is(err, embed.ErrDimensions) {
				t.Fatalf("decodeVector(% x) = %v, want ErrDimensions", tc.b, err)
			}
		})
	}
}

func FuzzVectorStoredForm(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 191, 0, 0, 0, 0})
	f.Add(encodeVector([]float32{0.1, -0.2, 1e-6}))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeVector(b, nil) // never panics
		v := make([]float32, len(b)/4)
		for i := range v {
			x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			// vectors as embedders make them: finite, not tiny beyond any use
			// (quantise's 1/scale overflows for a vector whose largest
			// component is below ~1e-36)
			if a := math.Abs(float64(x)); math.IsNaN(a) || a > 1e30 || a < 1e-30 {
				x = 0
			}
			v[i] = x
		}
		checkStoredForm(t, "fuzzed", v)
	})
}

// TestStoredVectorCosines measures what readers of floats (dreaming's
// duplicate and contradiction cosines) see of the stored form: the cosine
// of two sentence encoder vectors as stored is within 0.01 of the exact
// one (the index's own bound, Neighbours), and within the same distance of
// what the index computes.
func TestStoredVectorCosines(t *testing.T) {
	enc, err := sentence.New()
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"My sister Ana lives in Porto", "My sister Ana lives in Lisbon",
		"We bought a car last week", "Did I purchase an automobile recently?",
		"The user prefers tea over coffee", "The user likes coffee more than tea",
		"Book the dentist for Tuesday at 9", "I have a dentist appointment on Tuesday morning",
		"Sam's birthday is on the 4th of May", "Remember to water the plants",
	}
	vs, err := enc.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	x := newIndex(sentence.Dimensions)
	stored := make([][]float32, len(vs))
	for i, v := range vs {
		x.put(int64(i+1), meta{}, v)
		if stored[i], err = decodeFloats(encodeVector(v)); err != nil {
			t.Fatal(err)
		}
	}
	worst := 0.0
	for i := range vs {
		for j := i + 1; j < len(vs); j++ {
			exact, got := embed.Dot(vs[i], vs[j]), embed.Dot(stored[i], stored[j])
			worst = max(worst, math.Abs(float64(got-exact)))
			if d := math.Abs(float64(got - x.cosine(i, j))); d > 1e-4 {
				t.Errorf("%q / %q: the stored vectors' cosine %v, the index's %v", texts[i], texts[j], got, x.cosine(i, j))
			}
		}
	}
	if worst > 0.01 {
		t.Errorf("the stored vectors' cosines are up to %v from the exact ones, want ≤ 0.01", worst)
	}
	t.Logf("largest cosine error of the stored form over %d pairs: %.5f", len(vs)*(len(vs)-1)/2, worst)
}
