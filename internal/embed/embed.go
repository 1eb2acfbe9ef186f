// Package embed turns text into vectors for semantic memory recall.
//
// It provides the Embedder interface, an offline feature-hashing embedder
// that needs no network or model files (Offline), an adapter for provider
// embedding APIs (Wrap), a content-hash cache stored in SQLite (Cached), and
// the vector helpers shared by the memory store (Normalize, Dot, Encode,
// Decode).
package embed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/providers"
)

// Embedder maps texts to fixed-size vectors.
//
// Embed returns one vector of length Dimensions() per input text, in order.
// ID names the model (and its version/dimensions) so that vectors produced by
// a different model are recognised and re-embedded.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dimensions() int
	ID() string
}

// ErrDimensions is returned when a backend produces vectors whose length
// differs from the declared dimensions, or when a stored vector cannot be
// decoded.
var ErrDimensions = errors.New("embedding dimensions mismatch")

// Provider is any embedding backend with the provider calling convention,
// such as the OpenAI-compatible client in internal/providers/openai.
type Provider interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Adapter turns a Provider into an Embedder with a fixed identity.
type Adapter struct {
	p    Provider
	dims int
	id   string
}

// Wrap adapts p, which must return dims-dimensional vectors, to Embedder.
// id should name the model, for example "openai/text-embedding-3-small".
// Returned vectors are L2-normalised so that dot product equals cosine.
func Wrap(p Provider, dims int, id string) *Adapter {
	return &Adapter{p: p, dims: dims, id: fmt.Sprintf("%s/%d", id, dims)}
}

// Embed calls the provider and checks and normalises its answer.
//
// A text the model refuses (providers.ErrBadRequest: HTTP 400, 413, 422,
// which is how OpenAI-compatible servers answer an input longer than the
// model's context) does not sink the texts sent with it: a refused batch is
// split in halves and sent again, and a refused text of more than
// minSplitRunes characters is embedded in two halves (cut at a space near
// the middle), whose vectors are averaged by length, down to
// maxSplitDepth halvings. A text refused at its shortest is an error: the
// model refuses more than its length.
func (a *Adapter) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	vecs, err := a.embed(ctx, texts, 0)
	if err != nil {
		return nil, fmt.Errorf("embed %d texts with %s: %w", len(texts), a.id, err)
	}
	return vecs, nil
}

// Splitting a refused text stops at pieces of minSplitRunes characters
// (no model worth configuring refuses less) or after maxSplitDepth
// halvings (256 pieces).
const (
	minSplitRunes = 256
	maxSplitDepth = 8
)

// embed is Embed at a depth of halvings, with vectors checked and
// normalised.
func (a *Adapter) embed(ctx context.Context, texts []string, depth int) ([][]float32, error) {
	vecs, err := a.p.Embed(ctx, texts)
	if err != nil {
		if !errors.Is(err, providers.ErrBadRequest) || ctx.Err() != nil {
			return nil, err
		}
		return a.refused(ctx, texts, depth, err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("got %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != a.dims {
			return nil, fmt.Errorf("vector %d has %d dimensions, want %d: %w", i, len(v), a.dims, ErrDimensions)
		}
		Normalize(v)
	}
	return vecs, nil
}

// refused embeds texts, which the model refused together (err), in parts.
func (a *Adapter) refused(ctx context.Context, texts []string, depth int, err error) ([][]float32, error) {
	if len(texts) > 1 {
		half := len(texts) / 2
		first, err := a.embed(ctx, texts[:half], depth)
		if err != nil {
			return nil, err
		}
		second, err := a.embed(ctx, texts[half:], depth)
		if err != nil {
			return nil, err
		}
		return append(first, second...), nil
	}
	text := texts[0]
	n := utf8.RuneCountInString(text)
	if n <= minSplitRunes || depth >= maxSplitDepth {
		return nil, fmt.Errorf("the model refuses a text of %d characters: %w", n, err)
	}
	left, right := halves(text)
	vs, err := a.embed(ctx, []string{left, right}, depth+1)
	if err != nil {
		return nil, err
	}
	wl, wr := float32(utf8.RuneCountInString(left)), float32(utf8.RuneCountInString(right))
	v := vs[0]
	for i := range v {
		v[i] = wl*v[i] + wr*vs[1][i]
	}
	Normalize(v)
	return [][]float32{v}, nil
}

// halves cuts text in two at the whitespace nearest its middle (at the
// middle rune when it has none), leaving the whitespace out.
func halves(text string) (string, string) {
	mid := len(text) / 2
	for mid > 0 && !utf8.RuneStart(text[mid]) {
		mid--
	}
	best := -1
	for d := 0; d <= len(text)/2 && best < 0; d++ {
		for _, i := range []int{mid - d, mid + d} {
			if i > 0 && i < len(text) && isSpace(text[i]) {
				best = i
				break
			}
		}
	}
	if best >= 0 {
		left, right := strings.TrimRightFunc(text[:best], unicode.IsSpace), strings.TrimLeftFunc(text[best:], unicode.IsSpace)
		if left != "" && right != "" {
			return left, right
		}
	}
	return text[:mid], text[mid:]
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// Dimensions returns the declared vector length.
func (a *Adapter) Dimensions() int { return a.dims }

// ID returns the model identity including the dimensions.
func (a *Adapter) ID() string { return a.id }

// Normalize scales v to unit length in place (a zero vector is left as is).
func Normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

// Dot returns the dot product of a and b (cosine similarity for unit
// vectors). It panics if the lengths differ.
func Dot(a, b []float32) float32 {
	if len(a) != len(b) {
		panic("embed.Dot: length mismatch")
	}
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// Encode serialises v as little-endian float32, the BLOB format stored in
// SQLite.
func Encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Decode parses a BLOB written by Encode.
func Decode(b []byte) ([]float32, error) { return DecodeInto(nil, b) }

// DecodeInto parses a BLOB written by Encode into dst's array when it is
// large enough (a new one otherwise) and returns the vector: a loop over
// many rows decodes them all into one buffer.
func DecodeInto(dst []float32, b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("decode vector of %d bytes: %w", len(b), ErrDimensions)
	}
	v := dst[:0]
	if n := len(b) / 4; cap(v) >= n {
		v = v[:n]
	} else {
		v = make([]float32, n)
	}
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
