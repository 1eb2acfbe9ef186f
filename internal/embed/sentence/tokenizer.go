package sentence

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/unicode/norm"
)

// separator stands for a space in a piece (SentencePiece's U+2581).
const separator = '▁'

// tokenizer segments a text into the vocabulary's pieces exactly as
// @energetic-ai/embeddings' Tokenizer does (the one
// @tensorflow-models/universal-sentence-encoder ships): NFKC, a separator
// before the text and for each space, then the segmentation maximising the
// sum of the pieces' scores over every piece matching at each position, an
// unknown character scoring 0 as id 0, consecutive unknowns merged. Its
// quirks are kept on purpose, since the model was measured through it: a
// position no piece reaches counts as score 0, a tie goes to the later
// candidate, and the walk back steps by the piece's length in UTF-16 units.
//
// The pieces are read in place from the vocabulary text, and everything
// else from its index, vocab.idx (made by ./internal/gen, which documents
// its layout): the pieces sorted bytewise, so that those starting with a
// prefix are a run of them, and per id the piece's place in the text, its
// score and its length in UTF-16 units. Both are in the binary and viewed
// where they lie (on a little-endian machine, as the weights are), so a
// tokenizer costs no heap and no time to build. It is immutable and safe
// for concurrent use.
type tokenizer struct {
	vocab string
	// off[id] and size[id] locate piece id in vocab.
	off  []uint32
	size []uint16
	// score[id] and units[id] are piece id's score and length in UTF-16
	// code units (what the JS walk back steps by).
	score []float64
	units []uint8
	// sorted holds the ids the segmentation may use by piece bytewise:
	// the pieces starting with a prefix are a run of it.
	sorted []uint16
	// first[b] is where the pieces starting with a byte ≥ b begin in
	// sorted: those starting with byte b are sorted[first[b]:first[b+1]].
	first []uint16
}

func (t *tokenizer) piece(id uint16) string {
	return t.vocab[t.off[id] : t.off[id]+uint32(t.size[id])]
}

// newTokenizer views a vocabulary of "piece\tscore" lines, one per id, and
// its index (vocab.idx's layout) in place. It checks that the index fits the
// text, so that a mismatched pair fails here rather than in a segmentation.
func newTokenizer(vocab, index string) (*tokenizer, error) {
	const magic = "USEVIDX1"
	if len(index) < len(magic)+8 || index[:len(magic)] != magic {
		return nil, fmt.Errorf("vocabulary index: not a USE-lite index")
	}
	b := unsafe.Slice(unsafe.StringData(index), len(index))
	n := int(binary.LittleEndian.Uint32(b[8:]))
	m := int(binary.LittleEndian.Uint32(b[12:]))
	if lines := strings.Count(vocab, "\n"); n != lines || n > 0xffff || m > n {
		return nil, fmt.Errorf("vocabulary index: %d ids and %d sorted pieces for a vocabulary of %d", n, m, lines)
	}
	if want := 16 + 8*n + 4*n + 2*n + 2*m + 2*257 + n; len(b) != want {
		return nil, fmt.Errorf("vocabulary index: %d bytes, want %d", len(b), want)
	}
	t := &tokenizer{vocab: vocab}
	p := 16
	t.score, p = view[float64](b, p, n), p+8*n
	t.off, p = view[uint32](b, p, n), p+4*n
	t.size, p = view[uint16](b, p, n), p+2*n
	t.sorted, p = view[uint16](b, p, m), p+2*m
	t.first, p = view[uint16](b, p, 257), p+2*257
	t.units = b[p : p+n : p+n]
	for id := range n {
		if o, l := int(t.off[id]), int(t.size[id]); l == 0 || o+l >= len(vocab) || vocab[o+l] != '\t' {
			return nil, fmt.Errorf("vocabulary index: piece %d is not where the vocabulary has it", id)
		}
	}
	for k, id := range t.sorted {
		if int(id) >= n {
			return nil, fmt.Errorf("vocabulary index: sorted piece %d has id %d of %d", k, id, n)
		}
	}
	for c := range 256 {
		if t.first[c] > t.first[c+1] || int(t.first[c+1]) > m {
			return nil, fmt.Errorf("vocabulary index: byte %d's pieces out of order", c)
		}
	}
	return t, nil
}

// prefixBytes is the length of the first prefix encode segments when it
// wants only the first pieces of a long text.
const prefixBytes = 2048

// encode returns the ids of text's pieces, at most most of them from the
// start when most > 0.
//
// For the first pieces of a long text it segments a prefix cut just
// before a space, then a four times longer one while that gives fewer
// than most pieces: the ids of such a prefix are the first ids of the
// whole text. (A space is a separator, and no piece holds a separator
// but at its start, so no piece spans the cut, and nothing before it
// depends on what follows; the piece after the cut starts with the
// separator, a known piece, so no unknowns merge across it. NFKC does not
// reach across a space either.) The whole text costs memory in
// proportion to its length, and a pasted document may be megabytes.
func (t *tokenizer) encode(text string, most int) []int32 {
	return t.encodePrefix(text, most, prefixBytes)
}

func (t *tokenizer) encodePrefix(text string, most, limit int) []int32 {
	for most > 0 && limit < len(text) {
		cut := strings.LastIndexByte(text[:limit], ' ')
		if cut <= 0 {
			cut = strings.IndexByte(text[limit:], ' ')
			if cut < 0 {
				break
			}
			cut += limit
		}
		if ids := t.segment(text[:cut], most); len(ids) >= most {
			return ids
		}
		limit = 4 * max(limit, cut)
	}
	return t.segment(text, most)
}

// segment returns the ids of text's pieces, at most most of them from the
// start when most > 0 (the whole text is segmented first).
func (t *tokenizer) segment(text string, most int) []int32 {
	text = norm.NFKC.String(text)
	if text == "" {
		return nil
	}
	// buf is the text with the separators; at[k] is where its k-th
	// character starts (at[n] = len(buf)).
	buf := make([]byte, 0, len(text)+3+2*strings.Count(text, " "))
	at := make([]int32, 0, len(text)+2)
	at = append(at, 0)
	buf = utf8.AppendRune(buf, separator)
	for _, r := range text {
		at = append(at, int32(len(buf)))
		if r == ' ' {
			r = separator
		}
		buf = utf8.AppendRune(buf, r)
	}
	n := len(at)
	at = append(at, int32(len(buf)))
	sbuf := string(buf)
	// The JS tokenizer lists every candidate piece, then for each end
	// position by start ascending keeps the best. Taking each candidate as
	// it is found, by start ascending, compares the same scores in the
	// same order: best[i] is final when the pieces starting at i are
	// found, since all pieces ending at i start before it.
	best := make([]float64, n+1)
	words := make([]int32, n+1)
	take := func(start, end int, id int32) {
		var s float64
		if id != 0 {
			s = t.score[id]
		}
		s += best[start]
		if best[end] == 0 || s >= best[end] {
			best[end] = s
			words[end] = id
		}
	}
	for i := 0; i < n; i++ {
		c := buf[at[i]]
		lo, hi := int(t.first[c]), int(t.first[int(c)+1])
		found := false
		for j := i + 1; j <= n; j++ {
			prefix := sbuf[at[i]:at[j]]
			// The pieces starting with prefix are a run from the first
			// piece ≥ prefix (within those starting with the previous
			// prefix); none starts with it when that one does not.
			lo += sort.Search(hi-lo, func(k int) bool { return t.piece(t.sorted[lo+k]) >= prefix })
			if lo == hi {
				break
			}
			p := t.piece(t.sorted[lo])
			if !strings.HasPrefix(p, prefix) {
				break
			}
			if p == prefix {
				take(i, j, int32(t.sorted[lo]))
				found = true
			}
		}
		if !found {
			take(i, i+1, 0) // an unknown character: id 0, score 0
		}
	}
	var rev []int32
	for at := n; at > 0; at -= int(t.units[words[at]]) {
		rev = append(rev, words[at])
	}
	ids := make([]int32, 0, len(rev))
	prevUnk := false
	for _, id := range rev {
		if !(prevUnk && id == 0) {
			ids = append(ids, id)
		}
		prevUnk = id == 0
	}
	for a, b := 0, len(ids)-1; a < b; a, b = a+1, b-1 {
		ids[a], ids[b] = ids[b], ids[a]
	}
	if most > 0 && len(ids) > most {
		ids = ids[:most]
	}
	return ids
}
