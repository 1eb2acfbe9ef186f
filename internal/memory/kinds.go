package memory

import (
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
func (t *textIndex) kindTerms(query string, skip map[string]bool, have []qterm, w float32) []qterm {
	words := embed.Words(query)
	seen := make(map[uint32]bool, len(have))
	for _, q := range have {
		seen[q.tid] = true
	}
	var out []qterm
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
			kinds, ok := lexicon.Lookup(strings.Join(words[i:i+n], " "))
			if !ok {
				continue
			}
			group++
			for k := range kinds.All() {
				if embed.IsStopWord(k) {
					continue
				}
				if tid, ok := t.terms[embed.Stem(k)]; ok && !seen[tid] && t.df[tid] > 0 {
					seen[tid] = true
					out = append(out, qterm{tid: tid, w: w, group: group})
				}
			}
			i += n - 1
			break
		}
	}
	return out
}
