package embed

import (
	"context"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"
)

// DefaultDimensions is the vector length of the offline embedder when none
// is given.
const DefaultDimensions = 384

// OfflineWeights sets how much each feature family contributes to an
// offline vector. Each family is L2-normalised on its own before the
// weighted sum, so the weights are relative shares.
type OfflineWeights struct {
	Words    float64 // stemmed word unigrams
	Bigrams  float64 // consecutive content-word stem pairs
	Chars    float64 // character 3–5-grams of content words with boundary markers
	StopWord float64 // weight of a stop word relative to a content word (unigrams only)
}

// DefaultOfflineWeights are the weights tuned on LoCoMo retrieval.
var DefaultOfflineWeights = OfflineWeights{Words: 1.0, Bigrams: 0.35, Chars: 1.0, StopWord: 0.05}

// Offline is a deterministic embedder using signed feature hashing. It needs
// no network and no model files. Features are lower-cased (Porter2-)stemmed word
// unigrams (stop words down-weighted), content-word bigrams, and character
// 3–5-grams of each content word with word-boundary markers ("<paint>"),
// which lets morphological variants and typos share dimensions. Term
// frequencies are sublinear (1 + ln tf); each feature is hashed (FNV-1a) to a
// dimension with a hash-derived sign so collisions cancel rather than bias;
// the result is L2-normalised. Safe for concurrent use.
type Offline struct {
	dims int
	w    OfflineWeights
}

// NewOffline returns an offline embedder producing dims-dimensional vectors
// (DefaultDimensions when dims ≤ 0) with DefaultOfflineWeights.
func NewOffline(dims int) *Offline {
	return NewOfflineWeighted(dims, DefaultOfflineWeights)
}

// NewOfflineWeighted is NewOffline with explicit feature weights.
func NewOfflineWeighted(dims int, w OfflineWeights) *Offline {
	if dims <= 0 {
		dims = DefaultDimensions
	}
	return &Offline{dims: dims, w: w}
}

// Dimensions returns the vector length.
func (o *Offline) Dimensions() int { return o.dims }

// ID names the algorithm version, weights and dimensions; any change to the
// feature extraction must change it so stored vectors are re-embedded.
func (o *Offline) ID() string {
	return fmt.Sprintf("offline-hash-v3/w%.2f-b%.2f-c%.2f-s%.2f/%d", o.w.Words, o.w.Bigrams, o.w.Chars, o.w.StopWord, o.dims)
}

// Embed returns one unit vector per text. It never fails except when ctx is
// done.
func (o *Offline) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("offline embed: %w", err)
			}
		}
		out[i] = o.embedOne(t)
	}
	return out, nil
}

const (
	nsWord   = 'w'
	nsBigram = 'b'
	nsChar   = 'c'
)

// scratch is what embedding one text needs besides its result: the
// feature counts and the accumulator. A turn embeds a few texts (its
// question, its episodes), and making these afresh each time was most of
// what an embedding allocated; they are kept in scratchPool and emptied
// for the next text.
type scratch struct {
	uni, bi, chars map[string]float64
	at             []int
	acc            []float64
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{uni: map[string]float64{}, bi: map[string]float64{}, chars: map[string]float64{}}
}}

// maxPooledFeatures bounds the scratch kept for the next text: one long
// text (a pasted document) must not leave maps of its size in the pool.
const maxPooledFeatures = 4096

func (o *Offline) embedOne(text string) []float32 {
	words := Words(text)
	sc := scratchPool.Get().(*scratch)
	defer func() {
		if len(sc.chars) > maxPooledFeatures {
			return
		}
		clear(sc.uni)
		clear(sc.bi)
		clear(sc.chars)
		scratchPool.Put(sc)
	}()
	uni, bi, chars := sc.uni, sc.bi, sc.chars
	at := sc.at[:0] // byte offsets of the runes of the bounded word, then its length
	defer func() { sc.at = at }()
	prev := ""
	for _, w := range words {
		if IsStopWord(w) {
			uni[w] += o.w.StopWord
			continue
		}
		s := Stem(w)
		uni[s]++
		if prev != "" {
			bi[prev+" "+s]++
		}
		prev = s
		m := "<" + w + ">"
		if !utf8.ValidString(m) {
			m = string([]rune(m)) // each invalid byte a U+FFFD, as a rune slice holds it
		}
		// the n-grams of runes are substrings of m (no copy each)
		at = at[:0]
		for i := range m {
			at = append(at, i)
		}
		at = append(at, len(m))
		runes := len(at) - 1
		for n := 3; n <= 5; n++ {
			for i := 0; i+n <= runes; i++ {
				chars[m[at[i]:at[i+n]]]++
			}
		}
	}
	if cap(sc.acc) < o.dims {
		sc.acc = make([]float64, o.dims)
	}
	acc := sc.acc[:o.dims]
	clear(acc)
	o.addFamily(acc, uni, nsWord, o.w.Words)
	o.addFamily(acc, bi, nsBigram, o.w.Bigrams)
	o.addFamily(acc, chars, nsChar, o.w.Chars)
	v := make([]float32, o.dims)
	var s float64
	for _, x := range acc {
		s += x * x
	}
	if s == 0 {
		return v
	}
	inv := 1 / math.Sqrt(s)
	for i, x := range acc {
		v[i] = float32(x * inv)
	}
	return v
}

// addFamily adds one feature family, L2-normalised over its own features and
// scaled by weight, into acc.
func (o *Offline) addFamily(acc []float64, feats map[string]float64, ns byte, weight float64) {
	if weight == 0 || len(feats) == 0 {
		return
	}
	var norm float64
	for _, tf := range feats {
		w := sublinear(tf)
		norm += w * w
	}
	scale := weight / math.Sqrt(norm)
	for f, tf := range feats {
		h := fnv(ns, f)
		idx := int(h % uint64(o.dims))
		w := sublinear(tf) * scale
		if h>>63 == 1 {
			w = -w
		}
		acc[idx] += w
	}
}

// sublinear dampens repeated features: 1 + ln(tf) for tf ≥ 1, and tf itself
// for fractional (down-weighted) counts.
func sublinear(tf float64) float64 {
	if tf <= 1 {
		return tf
	}
	return 1 + math.Log(tf)
}

func fnv(ns byte, s string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	h ^= uint64(ns)
	h *= prime
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	// final avalanche so low bits (the bucket) and the top bit (the sign)
	// are independent
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}
