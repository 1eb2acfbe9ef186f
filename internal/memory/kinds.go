package memory

import (
	"iter"
	"slices"
	"strings"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/lexicon"
)

// maxKindPhrase is the most words a noun the query names may have
// ("musical instrument" is two).
const maxKindPhrase = 3

// relWeights are the weights of the lexicon's relations (lexicon.Kinds…)
// relative to the query's own words; 0 leaves a relation out.
type relWeights [lexicon.NumRelations]float32

// any reports whether some relation is used.
func (w relWeights) any() bool { return w != relWeights{} }

// kindTerms returns the full-text terms of the words the lexicon relates
// to the words and phrases of the query (lexicon.Lookup): the kinds and
// instances of the nouns it names ("how many musical instruments" adds
// guitar, drum, violin…) and, as w weighs them, their derived words,
// topics, hypernyms, a verb's kinds and synonyms; each term weighs its
// relation's weight (the largest when several relate it), leaving out
// words of skip, stop words, terms already in have and words no memory
// holds. At each position the longest phrase the lexicon relates words to
// by some relation of non-zero weight is taken, and its words are not
// looked up again on their own. The words related to one phrase are a
// group (qterm.group): a memory scores only its best one, so that a reply
// listing ten instruments does not outrank the message that names the
// user's guitar.
//
// It also returns, for each group g, nouns[g−1]: the stems of the noun's
// content words, which a memory holding one of its kinds covers (see
// coverage).
func (t *textIndex) kindTerms(query string, skip map[string]bool, have []qterm, w relWeights) (kinds []qterm, nouns [][]string) {
	if !w.any() {
		return nil, nil
	}
	words := embed.Words(query)
	seen := make(map[uint32]bool, len(have))
	for _, q := range have {
		seen[q.tid] = true
	}
	var group uint16
	content := func(w string) bool { return !skip[w] && !embed.IsStopWord(w) }
	for phrase, found := range kindPhrases(words, content, w) {
		group++
		var stems []string
		for _, x := range phrase {
			if content(x) {
				stems = append(stems, embed.Stem(x))
			}
		}
		nouns = append(nouns, stems)
		first := len(kinds)
		for r, rw := range w {
			if rw <= 0 {
				continue
			}
			for k, stem := range found.Stems(lexicon.Relation(r)) {
				tid, ok := t.terms[string(stem)]
				if !ok || t.df[tid] == 0 || embed.IsStopWord(string(k)) {
					continue
				}
				if !seen[tid] {
					seen[tid] = true
					kinds = append(kinds, qterm{tid: tid, w: rw, group: group})
					continue
				}
				// related twice: the larger weight
				for j := first; j < len(kinds); j++ {
					if kinds[j].tid == tid {
						kinds[j].w = max(kinds[j].w, rw)
					}
				}
			}
		}
	}
	return kinds, nouns
}

// kindPhrases yields, left to right, the phrases of words kindTerms and
// the excerpts' focus expand, with what the lexicon holds of each: at each
// position the longest phrase of up to maxKindPhrase words, beginning and
// ending with a content word, that the lexicon relates words to by some
// relation of non-zero weight in w; its words are not looked up again.
func kindPhrases(words []string, content func(string) bool, w relWeights) iter.Seq2[[]string, lexicon.Entry] {
	return func(yield func([]string, lexicon.Entry) bool) {
		for i := 0; i < len(words); i++ {
			if !content(words[i]) {
				continue
			}
			for n := min(maxKindPhrase, len(words)-i); n >= 1; n-- {
				if !content(words[i+n-1]) {
					continue
				}
				found, ok := lexicon.Lookup(strings.Join(words[i:i+n], " "))
				if !ok || !related(found, w) {
					continue
				}
				if !yield(words[i:i+n], found) {
					return
				}
				i += n - 1
				break
			}
		}
	}
}

// related reports whether the entry relates some word to its phrase by a
// relation of non-zero weight.
func related(e lexicon.Entry, w relWeights) bool {
	for r, rw := range w {
		if rw > 0 && e.Has(lexicon.Relation(r)) {
			return true
		}
	}
	return false
}

// kindCover measures how much of a query's word weight a memory holds
// through the kinds of its nouns.
type kindCover struct {
	terms *idTable[termVal] // kind term → its group
	// nouns[g−1] is group g's noun's stems: nounAt[nounOff[g-1]:nounOff[g]]
	// index stems, the distinct stems of every noun
	nounOff []int
	nounAt  []int
	stems   []nounStem
	// covered is the stems a memory covers, kept between memories
	covered []int
}

// nounStem is a stem of a noun's words, looked up once per query.
type nounStem struct {
	stem string
	tid  uint32  // its term
	held bool    // the index holds its term (tid is valid)
	wt   float64 // its weight (stemWeight)
}

// newKindCover prepares kindCover for the kinds and nouns kindTerms
// returned, stemWeight being the query stems' weights; the kinds' groups
// are set in terms.
func (t *textIndex) newKindCover(kinds []qterm, nouns [][]string, stemWeight map[string]float64, terms *idTable[termVal]) kindCover {
	for _, k := range kinds {
		terms.ref(k.tid).group = k.group
	}
	kc := kindCover{terms: terms}
	if len(kinds) == 0 {
		return kc
	}
	kc.nounOff = make([]int, 1, len(nouns)+1)
	for _, stems := range nouns {
		for _, st := range stems {
			n := slices.IndexFunc(kc.stems, func(ns nounStem) bool { return ns.stem == st })
			if n < 0 {
				n = len(kc.stems)
				tid, held := t.terms[st]
				kc.stems = append(kc.stems, nounStem{stem: st, tid: tid, held: held, wt: stemWeight[st]})
			}
			kc.nounAt = append(kc.nounAt, n)
		}
		kc.nounOff = append(kc.nounOff, len(kc.nounAt))
	}
	return kc
}

// weight returns the weight of the nouns' stems that a memory with the
// distinct terms doc covers through a kind and does not hold itself
// (coverage counts those); groups are the groups of doc's kind terms, in
// the order of doc.
func (kc *kindCover) weight(doc []uint32, groups []uint16) float64 {
	covered := kc.covered[:0]
	for _, g := range groups {
		for _, n := range kc.nounAt[kc.nounOff[g-1]:kc.nounOff[g]] {
			if !slices.Contains(covered, n) {
				covered = append(covered, n)
			}
		}
	}
	kc.covered = covered
	var s float64
	for _, n := range covered {
		ns := kc.stems[n]
		if ns.held && slices.Contains(doc, ns.tid) {
			continue // held itself
		}
		s += ns.wt
	}
	return s
}
