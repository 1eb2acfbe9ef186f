package sentence

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	"golang.org/x/text/unicode/norm"
)

// reservedPieces is how many leading vocabulary entries (<unk>, <s>, </s>
// and three extra ids) the tokenizer never produces except <unk> (id 0).
const reservedPieces = 6

// separator stands for a space in a piece (SentencePiece's U+2581).
const separator = '▁'

// tokenizer segments a text into the vocabulary's pieces exactly as
// @energetic-ai/embeddings' Tokenizer does (the one
// @tensorflow-models/universal-sentence-encoder ships): NFKC, a separator
// before the text and for each space, then the segmentation maximising the
// sum of the pieces' scores over a trie of the pieces, an unknown
// character scoring 0 as id 0, consecutive unknowns merged. Its quirks are
// kept on purpose, since the model was measured through it: a position no
// piece reaches counts as score 0, a tie goes to the later candidate, and
// the walk back steps by the piece's length in UTF-16 units.
//
// It is immutable after newTokenizer and safe for concurrent use.
type tokenizer struct {
	// edges maps (node, rune) to the child node; node 0 is the root.
	edges map[uint64]int32
	// end[node] is the id of the piece ending at node, or -1.
	end []int32
	// score[id] and units[id] are piece id's score and length in UTF-16
	// code units (what the JS walk back steps by).
	score []float64
	units []int32
}

func edgeKey(node int32, r rune) uint64 { return uint64(node)<<32 | uint64(uint32(r)) }

// newTokenizer reads a vocabulary of "piece\tscore" lines, one per id.
func newTokenizer(vocab string) (*tokenizer, error) {
	t := &tokenizer{edges: map[uint64]int32{}, end: []int32{-1}}
	sc := bufio.NewScanner(strings.NewReader(vocab))
	for id := 0; sc.Scan(); id++ {
		piece, s, ok := strings.Cut(sc.Text(), "\t")
		if !ok || piece == "" {
			return nil, fmt.Errorf("vocabulary line %d: want piece<TAB>score", id+1)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("vocabulary line %d: %w", id+1, err)
		}
		t.score = append(t.score, f)
		t.units = append(t.units, int32(len(utf16.Encode([]rune(piece)))))
		if id < reservedPieces {
			continue
		}
		node := int32(0)
		for _, r := range piece {
			k := edgeKey(node, r)
			next, ok := t.edges[k]
			if !ok {
				next = int32(len(t.end))
				t.edges[k] = next
				t.end = append(t.end, -1)
			}
			node = next
		}
		t.end[node] = int32(id) // a later duplicate replaces an earlier one, as in JS
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the vocabulary: %w", err)
	}
	if len(t.score) <= reservedPieces {
		return nil, fmt.Errorf("vocabulary has %d pieces", len(t.score))
	}
	return t, nil
}

// candidate is a piece from start to end (rune positions) of the text.
type candidate struct {
	start int32
	id    int32
}

// encode returns the ids of text's pieces, at most max of them from the
// start when max > 0 (the whole text is segmented first, as the
// segmentation of a prefix can depend on what follows).
func (t *tokenizer) encode(text string, max int) []int32 {
	text = norm.NFKC.String(text)
	if text == "" {
		return nil
	}
	syms := make([]rune, 0, len(text)+1)
	syms = append(syms, separator)
	for _, r := range text {
		if r == ' ' {
			r = separator
		}
		syms = append(syms, r)
	}
	n := len(syms)
	// ends[e] lists the candidates ending at e, by start ascending (the
	// order JS iterates its object keyed by start).
	ends := make([][]candidate, n+1)
	for i := 0; i < n; i++ {
		node := int32(0)
		found := false
		for j := i; j < n; j++ {
			next, ok := t.edges[edgeKey(node, syms[j])]
			if !ok {
				break
			}
			node = next
			if id := t.end[node]; id >= 0 {
				ends[j+1] = append(ends[j+1], candidate{int32(i), id})
				found = true
			}
		}
		if !found {
			ends[i+1] = append(ends[i+1], candidate{int32(i), 0})
		}
	}
	best := make([]float64, n+1)
	words := make([]int32, n+1)
	for e := 0; e <= n; e++ {
		// Candidates were appended by start ascending already.
		for _, c := range ends[e] {
			var s float64
			if c.id != 0 {
				s = t.score[c.id]
			}
			s += best[c.start]
			if best[e] == 0 || s >= best[e] {
				best[e] = s
				words[e] = c.id
			}
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
	if max > 0 && len(ids) > max {
		ids = ids[:max]
	}
	return ids
}
