package memory

import (
	"slices"
	"strings"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/lexicon"
)

// maxKindPhrase is the most words a noun the query names may have
// ("musical instrument" is two).
const maxKindPhrase = 3

// kindTerms returns the full-text terms of the words naming kinds and
// instances of the nouns the query names (lexicon.Lookup: "how many
// musical instruments" adds guitar, drum, violin…), each with weight w,
// leaving out words of skip, stop words, terms already in have and words
// no memory holds. At each position the longest noun phrase the lexicon
// knows is taken, and its words are not looked up again on their own. The
// kinds of one noun are a group (qterm.group): a memory scores only its
// best one, so that a reply listing ten instruments does not outrank the
// message that names the user's guitar.
//
// It also returns, for each group g, nouns[g−1]: the stems of the noun's
// content words, which a memory holding one of its kinds covers (see
// coverage).
func (t *textIndex) kindTerms(query string, skip map[string]bool, have []qterm, w float32) (kinds []qterm, nouns [][]string) {
	if w <= 0 {
		return nil, nil
	}
	words := embed.Words(query)
	seen := make(map[uint32]bool, len(have))
	for _, q := range have {
		seen[q.tid] = true
	}
	var group uint16
	content := func(w string) bool { return !skip[w] && !embed.IsStopWord(w) }
	for i := 0; i < len(words); i++ {
		if !content(words[i]) {
			continue
		}
		for n := min(maxKindPhrase, len(words)-i); n >= 1; n-- {
			if !content(words[i+n-1]) {
				continue
			}
			found, ok := lexicon.Lookup(strings.Join(words[i:i+n], " "))
			if !ok {
				continue
			}
			group++
			var stems []string
			for _, x := range words[i : i+n] {
				if content(x) {
					stems = append(stems, embed.Stem(x))
				}
			}
			nouns = append(nouns, stems)
			for k := range found.All() {
				if embed.IsStopWord(k) {
					continue
				}
				if tid, ok := t.terms[embed.Stem(k)]; ok && !seen[tid] && t.df[tid] > 0 {
					seen[tid] = true
					kinds = append(kinds, qterm{tid: tid, w: w, group: group})
				}
			}
			i += n - 1
			break
		}
	}
	return kinds, nouns
}

// kindCover measures how much of a query's word weight a memory holds
// through the kinds of its nouns.
type kindCover struct {
	t      *textIndex
	group  map[uint32]uint16 // kind term → its group
	nouns  [][]string        // by group − 1: the noun's stems
	stemWt map[string]float64
}

// newKindCover prepares kindCover for the kinds and nouns kindTerms
// returned, stemWeight being the query stems' weights.
func (t *textIndex) newKindCover(kinds []qterm, nouns [][]string, stemWeight map[string]float64) kindCover {
	kc := kindCover{t: t, nouns: nouns, stemWt: stemWeight}
	if len(kinds) > 0 {
		kc.group = make(map[uint32]uint16, len(kinds))
		for _, k := range kinds {
			kc.group[k.tid] = k.group
		}
	}
	return kc
}

// weight returns the weight of the nouns' stems that a memory with the
// distinct terms doc covers through a kind and does not hold itself
// (coverage counts those).
func (kc kindCover) weight(doc []uint32) float64 {
	if len(kc.group) == 0 {
		return 0
	}
	var covered []string
	for _, tid := range doc {
		g, ok := kc.group[tid]
		if !ok {
			continue
		}
		for _, st := range kc.nouns[g-1] {
			if !slices.Contains(covered, st) {
				covered = append(covered, st)
			}
		}
	}
	var s float64
	for _, st := range covered {
		if tid, ok := kc.t.terms[st]; ok && slices.Contains(doc, tid) {
			continue // held itself
		}
		s += kc.stemWt[st]
	}
	return s
}
