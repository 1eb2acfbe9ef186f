package sentence

import (
	"slices"
	"strings"
	"testing"
)

// TestScratchSizeKeepsVectors checks that a text's vector does not depend
// on the size of the scratch its pass ran in: fitted to its pieces, made
// for maxPieces, or grown by a longer text before.
func TestScratchSizeKeepsVectors(t *testing.T) {
	enc, tok := newTestEncoder(t)
	words := strings.Fields(strings.Repeat("We went hiking in the mountains last weekend and the weather was lovely. ", 20))
	full := newScratch()
	full.fit(maxPieces)
	grown := newScratch()
	for _, n := range []int{1, 5, 16, 17, 40, 64, 100, maxPieces} {
		ids := tok.encode(strings.Join(words[:n], " "), maxPieces)
		fitted, big, reused := make([]float32, Dimensions), make([]float32, Dimensions), make([]float32, Dimensions)
		s := newScratch()
		enc.forward(s, ids, fitted)
		if s.pieces < len(ids) || s.pieces > max(scratchStep, 2*len(ids)) {
			t.Errorf("%d pieces: scratch for %d", len(ids), s.pieces)
		}
		enc.forward(full, ids, big)
		enc.forward(grown, tok.encode(strings.Join(words, " "), maxPieces), make([]float32, Dimensions))
		enc.forward(grown, ids, reused)
		if !slices.Equal(fitted, big) || !slices.Equal(fitted, reused) {
			t.Errorf("%d pieces: the vector depends on the scratch's size", len(ids))
		}
	}
}
