package sentence

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/sentence/qmat"
)

const (
	// Dimensions is the length of the encoder's vectors.
	Dimensions = 512
	// ID names the encoder's vectors (model, windows, dimensions stored /
	// produced): vectors of different IDs are never compared. The windows
	// (w128s96x8: windows of 128 pieces every 96, at most 8) are in it
	// because a text over 128 pieces gets another vector than the
	// graph's, which builtin/use-lite@512/512 named (a store of those is
	// re-embedded); f67 is the first window's weight (firstWeight).
	ID = "builtin/use-lite/w128s96x8f67@512/512"
	// ClippedID names the vectors of an encoder that reads a text's first
	// maxPieces pieces only, as the graph does (NewClipped): the built-in
	// encoder's before stop 47.
	ClippedID = "builtin/use-lite@512/512"

	embeddingRows = 8002 // the graph's table: the 8,000 pieces and two spare rows
	ffnDim        = 1536
	lnEpsilon     = 1e-6  // the graph's layer-norm epsilon (float32 1e-6)
	l2Floor       = 1e-12 // l2_normalize's floor on the squared norm
)

var _ embed.Embedder = (*Encoder)(nil)

// Encoder embeds texts with USE-lite. It is immutable and safe for
// concurrent use.
type Encoder struct {
	// tokenizer views the tokenizer and checks its index on first use
	// (once).
	tokenizer func() (*tokenizer, error)
	w         *weights
	scratch   sync.Pool // *scratch
	// clip reads a text's first maxPieces pieces only (NewClipped).
	clip bool
}

// New returns an Encoder over the weights and vocabulary embedded in the
// binary. It views the weights, the vocabulary and its index in place (no
// copy: ~0.1 ms; the first Embed checks the index against the vocabulary,
// ~20 µs). Call it once and share the Encoder.
func New() (*Encoder, error) {
	return newEncoder(blob, vocabText)
}

// NewClipped returns an Encoder that reads a text's first maxPieces (128)
// pieces only, as the graph does and as the built-in encoder did before it
// read windows: the model of vectors stored under ClippedID, which recall
// goes on using while a store of them is re-embedded. A text of at most
// 128 pieces (a query) gets the same vector from both.
func NewClipped() (*Encoder, error) {
	e, err := New()
	if err != nil {
		return nil, err
	}
	e.clip = true
	return e, nil
}

func newEncoder(weightsBlob, vocab string) (*Encoder, error) {
	w, err := parseWeights(weightsBlob)
	if err != nil {
		return nil, fmt.Errorf("loading the sentence encoder: %w", err)
	}
	if n := strings.Count(vocab, "\n"); n > embeddingRows {
		return nil, fmt.Errorf("loading the sentence encoder: %d pieces for %d embeddings", n, embeddingRows)
	}
	return &Encoder{w: w, tokenizer: sync.OnceValues(func() (*tokenizer, error) {
		tok, err := newTokenizer(vocab, vocabIndex)
		if err != nil {
			return nil, fmt.Errorf("loading the sentence encoder: %w", err)
		}
		return tok, nil
	})}, nil
}

// Dimensions returns 512.
func (e *Encoder) Dimensions() int { return Dimensions }

// ID returns the identity of the encoder's vectors.
func (e *Encoder) ID() string {
	if e.clip {
		return ClippedID
	}
	return ID
}

// Embed returns one L2-normalised 512-float vector per text. A text of at
// most maxPieces (128) pieces is read whole, as the graph reads it; a
// longer one as windows of maxPieces pieces (see windows), up to
// maxWindows of them (its first maxTextPieces pieces), and its vector is
// the windows' vectors combined (see combine). A blank text (empty or only
// white space) is read as one space, as bench/embed's server sent it to
// the reference model (which cannot take no pieces). It stops between
// texts when ctx is done.
func (e *Encoder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	tok, err := e.tokenizer()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	s, _ := e.scratch.Get().(*scratch)
	if s == nil {
		s = newScratch()
	}
	defer e.scratch.Put(s)
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embedding text %d of %d: %w", i+1, len(texts), err)
		}
		if strings.TrimFunc(t, isJSSpace) == "" {
			t = " "
		}
		most := maxTextPieces
		if e.clip {
			most = maxPieces
		}
		ids := tok.encode(t, most)
		v := make([]float32, Dimensions)
		if len(ids) <= maxPieces {
			e.forward(s, ids, v)
		} else {
			e.combine(s, ids, v)
		}
		out[i] = v
	}
	return out, nil
}

// windows returns where the windows over n > maxPieces pieces start: every
// windowStride pieces, the last one moved back to end at the last piece,
// so that every window is maxPieces pieces long (a short last window would
// weigh as much as a full one on a few pieces) and shares at least
// maxPieces−windowStride pieces with the one before it.
func windows(n int) []int {
	var at []int
	for a := 0; ; a += windowStride {
		if a+maxPieces >= n {
			return append(at, n-maxPieces)
		}
		at = append(at, a)
	}
}

// firstWeight is the share of a long text's vector that its first
// window's vector has; the other windows share the rest equally. The first
// window is where a reply answers what it was asked (the most precise
// vector), and a plain mean let a long reply's later windows dilute it: on
// LongMemEval dev, cross-validated (--cv --cv-repeats 5), round
// recall_all@10 86.86 -> 88.32 with the plain mean but NDCG@10 76.57 ->
// 74.60; with the first window at 2/3, 89.64 and 77.99 (0.8: 87.30, 77.20).
const firstWeight = 2.0 / 3

// combine writes the vector of ids (more than maxPieces of them, at most
// maxTextPieces) to dst: each window's embedding, as forward computes it
// for the window alone (L2-normalised), weighted firstWeight for the first
// window and (1−firstWeight)/(windows−1) for each other, summed and
// renormalised. The first window's vector is the one the graph computes
// for the text (which clips it there).
func (e *Encoder) combine(s *scratch, ids []int32, dst []float32) {
	at := windows(len(ids))
	e.forward(s, ids[:maxPieces], dst)
	first := float32(firstWeight)
	for d := range dst {
		dst[d] *= first
	}
	rest := float32((1 - firstWeight) / float64(len(at)-1))
	for _, a := range at[1:] {
		e.forward(s, ids[a:a+maxPieces], s.win)
		for d, x := range s.win {
			dst[d] += rest * x
		}
	}
	normalise(dst)
}

// isJSSpace reports whether JavaScript's String.prototype.trim removes r.
func isJSSpace(r rune) bool {
	return r == '\uFEFF' || (unicode.IsSpace(r) && r != '\u0085')
}

// scratch holds one forward pass's activations for up to pieces pieces:
// each buffer is reused once what it held has been read (see layer).
// forward grows it to the text's pieces in steps (16, 32, 64, 128), so
// that a short query's pass takes 0.2 MB instead of the 1.5 MB that 128
// pieces take: less garbage for the collector, fewer collections, a lower
// peak heap.
type scratch struct {
	pieces int
	h      []float32 // n × 512: the residual stream
	y      []float32 // n × 512: layer-norm output (the embeddings first), attention's heads combined, the FFN's output
	big    []float32 // n × 1536: q, k, v, then attention's output, then the FFN's hidden units; one spare row
	qh     []float32 // n × headDepth: one head's queries
	kh, vh []float32
	scores []float32 // n × n
	pool   []float32 // 512
	win    []float32 // 512: a window's vector (combine)
}

func newScratch() *scratch {
	return &scratch{pool: make([]float32, Dimensions), win: make([]float32, Dimensions)}
}

// scratchStep is the fewest pieces a scratch is made for.
const scratchStep = 16

// fit makes room for n pieces (at most maxPieces).
func (s *scratch) fit(n int) {
	if n <= s.pieces {
		return
	}
	m := scratchStep
	for m < n {
		m *= 2
	}
	m = min(m, maxPieces)
	*s = scratch{
		pieces: m, pool: s.pool, win: s.win,
		h: make([]float32, m*512), y: make([]float32, m*512), big: make([]float32, (m+1)*ffnDim),
		qh: make([]float32, m*128), kh: make([]float32, m*128), vh: make([]float32, m*128),
		scores: make([]float32, m*m),
	}
}

// forward writes the embedding of the pieces ids (at most maxPieces) to
// dst, as the TF.js graph computes it for one text.
func (e *Encoder) forward(s *scratch, ids []int32, dst []float32) {
	e.pooled(s, ids)
	e.project(s, dst)
}

// pooled leaves the transformer's output for ids (at most maxPieces),
// averaged over the pieces, in s.pool.
func (e *Encoder) pooled(s *scratch, ids []int32) {
	w := e.w
	n := len(ids)
	if n == 0 {
		clear(s.pool) // the mean of no pieces (the graph divides by at least 1)
		return
	}
	s.fit(n)
	// The embeddings plus (the embeddings plus the timing signal): the
	// graph adds AddTimingSignal's output to its own input, so each
	// embedding counts twice. The timing signal (sin of position ×
	// inverse timescale in the first 128 dimensions, cos in the next)
	// is in the blob.
	x := s.y[:n*256]
	for p, id := range ids {
		row := x[p*256 : (p+1)*256]
		w.embedding.Row(row, int(id))
		for d, t := range w.timing[p*256 : (p+1)*256] {
			row[d] += row[d] + t
		}
	}
	e.layer(s, &w.layers[0], n, false)
	e.layer(s, &w.layers[1], n, true) // leaves the mean over the pieces in s.pool
}

// project writes the tanh layer over s.pool, L2-normalised, to dst.
func (e *Encoder) project(s *scratch, dst []float32) {
	w := e.w
	w.pool.MulT(dst, s.pool, 1)
	for d := range dst {
		dst[d] = float32(math.Tanh(float64(dst[d] + w.poolB[d])))
	}
	normalise(dst)
}

// normalise scales v to unit length, as l2_normalize does (its floor on
// the squared norm).
func normalise(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	scale := float32(1 / math.Sqrt(math.Max(ss, l2Floor)))
	for d := range v {
		v[d] *= scale
	}
}

// layer runs one transformer layer: its input is s.y (layer 0: the n × 256
// embeddings) or s.h (layer 1), its output s.h; for the last layer (mean),
// the mean of its output over the n pieces in s.pool instead.
func (e *Encoder) layer(s *scratch, l *layer, n int, mean bool) {
	d := l.dim
	if l.res != nil {
		// Layer 0 widens the residual 256 → 512 with a dense layer, and
		// normalises the embeddings for attention.
		l.res.MulT(s.h[:n*512], s.y[:n*256], n)
		addBias(s.h[:n*512], l.resB)
		layerNorm(s.y[:n*d], s.y[:n*d], l.ln1g, l.ln1b, n)
	} else {
		layerNorm(s.y[:n*d], s.h[:n*d], l.ln1g, l.ln1b, n)
	}
	// Multi-head self-attention over the n pieces (all real: no mask).
	// Once q, k and v are made, s.y is free: the heads' outputs go there
	// (o), and once they are all made, s.big is: the output projection
	// goes there (a).
	qkv := s.big[:n*3*d]
	l.qkv.MulT(qkv, s.y[:n*d], n)
	o := s.y[:n*d]
	hd := l.headDepth
	qh, kh, vh, sc := s.qh[:n*hd], s.kh[:n*hd], s.vh[:n*hd], s.scores[:n*n]
	for h := 0; h < l.heads; h++ {
		// The head's queries (scaled), keys and values, biases added.
		qb := l.qkvB[h*hd : (h+1)*hd]
		kb := l.qkvB[d+h*hd : d+(h+1)*hd]
		vb := l.qkvB[2*d+h*hd : 2*d+(h+1)*hd]
		for p := 0; p < n; p++ {
			row := qkv[p*3*d : (p+1)*3*d]
			q, k, v := qh[p*hd:(p+1)*hd], kh[p*hd:(p+1)*hd], vh[p*hd:(p+1)*hd]
			for j, x := range row[h*hd : (h+1)*hd] {
				q[j] = (x + qb[j]) * l.scale
			}
			for j, x := range row[d+h*hd : d+(h+1)*hd] {
				k[j] = x + kb[j]
			}
			for j, x := range row[2*d+h*hd : 2*d+(h+1)*hd] {
				v[j] = x + vb[j]
			}
		}
		qmat.MulABT(sc, qh, kh, n, n, hd)
		for p := 0; p < n; p++ {
			softmax(sc[p*n : (p+1)*n])
		}
		qmat.MulAB(qh, sc, vh, n, hd, n) // the head's output, over its queries
		for p := 0; p < n; p++ {
			copy(o[p*d+h*hd:p*d+(h+1)*hd], qh[p*hd:(p+1)*hd])
		}
	}
	a := s.big[:n*512]
	l.out.MulT(a, o, n)
	addResidual(s.h[:n*512], a, l.outB)
	// Feed-forward: layer norm, 512 → 1536 ReLU → 512, residual.
	layerNorm(s.y[:n*512], s.h[:n*512], l.ln2g, l.ln2b, n)
	f := s.big[:n*ffnDim]
	l.ffn1.MulT(f, s.y[:n*512], n)
	for r := 0; r < len(f); r += ffnDim {
		row := f[r : r+ffnDim]
		for k, b := range l.ffn1B {
			row[k] = max(row[k]+b, 0)
		}
	}
	if !mean {
		// s.y (the FFN's input) has been read: its output goes there.
		l.ffn2.MulT(s.y[:n*512], f, n)
		addResidual(s.h[:n*512], s.y[:n*512], l.ffn2B)
		return
	}
	// The FFN's last product is linear and the pooling a mean, so the mean
	// of h + f·W2ᵀ + b over the pieces is mean(h) + mean(f)·W2ᵀ + b: one
	// row through W2 instead of n (a sixth of a text's multiplications).
	inv := 1 / float32(n)
	fm := s.big[n*ffnDim : (n+1)*ffnDim] // s.big's spare row
	clear(fm)
	clear(s.pool)
	for p := 0; p < n; p++ {
		qmat.Axpy(fm, f[p*ffnDim:(p+1)*ffnDim], 1)
		qmat.Axpy(s.pool, s.h[p*512:(p+1)*512], 1)
	}
	for k := range fm {
		fm[k] *= inv
	}
	l.ffn2.MulT(s.y[:512], fm, 1)
	for k, v := range s.y[:512] {
		s.pool[k] = s.pool[k]*inv + v + l.ffn2B[k]
	}
}

// layerNorm sets each row of dst (n rows of len(g)) to g·(x−mean)/√(var+ε)+b
// of the same row of x; dst may be x.
func layerNorm(dst, x, g, b []float32, n int) {
	d := len(g)
	for r := 0; r < n; r++ {
		xr, dr := x[r*d:(r+1)*d], dst[r*d:(r+1)*d]
		var sum float64
		for _, v := range xr {
			sum += float64(v)
		}
		mean := float32(sum / float64(d))
		var sq float64
		for _, v := range xr {
			c := float64(v - mean)
			sq += c * c
		}
		inv := float32(1 / math.Sqrt(sq/float64(d)+lnEpsilon))
		for k, v := range xr {
			dr[k] = g[k]*inv*(v-mean) + b[k]
		}
	}
}

// softmax replaces v by its softmax.
func softmax(v []float32) {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	var sum float32
	for k, x := range v {
		ex := expNeg(x - m)
		v[k] = ex
		sum += ex
	}
	inv := 1 / sum
	for k := range v {
		v[k] *= inv
	}
}

// expNeg returns e^x for x ≤ 0 to float32 precision (Cephes' expf: x =
// k·ln 2 + r with |r| ≤ ln 2 / 2, a degree-6 polynomial for e^r, 2^k put
// in the exponent), 0 below −87.
func expNeg(x float32) float32 {
	if x < -87 {
		return 0
	}
	k := float32(math.Floor(float64(x*1.44269504088896341 + 0.5)))
	r := x - k*0.693359375 + k*2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	e := p*r*r + r + 1
	return e * math.Float32frombits(uint32(int32(k)+127)<<23)
}

// addBias adds b to each row of x (rows of len(b)).
func addBias(x, b []float32) {
	for r := 0; r < len(x); r += len(b) {
		row := x[r : r+len(b)]
		for k, v := range b {
			row[k] += v
		}
	}
}

// addResidual adds each row of a plus b to the same row of h (rows of
// len(b)), in the graph's order: h + (a + b).
func addResidual(h, a, b []float32) {
	a = a[:len(h)]
	for r := 0; r < len(h); r += len(b) {
		hr, ar := h[r:r+len(b)], a[r:r+len(b)]
		for k, v := range b {
			hr[k] += ar[k] + v
		}
	}
}
