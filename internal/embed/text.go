package embed

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words splits text into lower-cased word tokens: runs of letters and
// digits. Apostrophes inside a word are dropped together with common
// English clitics ("Caroline's" → "caroline", "don't" → "dont").
func Words(text string) []string {
	var out []string
	EachWord(text, func(w string, _ int) { out = append(out, w) })
	return out
}

// EachWord calls fn with each word of text in order, as Words splits them,
// and the byte offset in text of the word's first letter or digit.
func EachWord(text string, fn func(w string, at int)) {
	var b strings.Builder
	start := 0
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := b.String()
		b.Reset()
		fn(w, start)
	}
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if b.Len() == 0 {
				start = i
			}
			b.WriteRune(unicode.ToLower(r))
		case (r == '\'' || r == '’') && b.Len() > 0 && letterAt(text, i+n):
			// possessive 's and clitics: "'s" ends the word, "n't"/"'re"/"'ll" are glued on
			j := i + n
			for letterAt(text, j) {
				_, m := utf8.DecodeRuneInString(text[j:])
				j += m
			}
			if strings.ToLower(text[i+n:j]) == "s" {
				i = j
				flush()
				continue
			}
			// keep the letters of other clitics attached ("don't" → "dont")
		default:
			flush()
		}
		i += n
	}
	flush()
}

// letterAt reports whether a letter starts at text[i:].
func letterAt(text string, i int) bool {
	if i >= len(text) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsLetter(r)
}

// CountWords returns len(Words(text)) without building the words.
func CountWords(text string) int {
	n := 0
	in := false
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if !in {
				n++
				in = true
			}
		case (r == '\'' || r == '’') && in && i+1 < len(rs) && unicode.IsLetter(rs[i+1]):
			j := i + 1
			for j < len(rs) && unicode.IsLetter(rs[j]) {
				j++
			}
			if j == i+2 && (rs[i+1] == 's' || rs[i+1] == 'S') {
				i = j - 1
				in = false // "'s" ends the word
			}
		default:
			in = false
		}
	}
	return n
}

// IsStopWord reports whether w (lower-case) is a common English function
// word that carries little meaning for retrieval.
func IsStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}

var stopWords = func() map[string]struct{} {
	list := `a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most my myself
no nor not now of off on once only or other our ours ourselves out over own same she should so some such than
that the their theirs them themselves then there these they this those through to too under until up very was
we were what when where which while who whom why will with would you your yours yourself yourselves
im ive id ill youre youve youll hes shes its were theyre dont doesnt didnt isnt arent wasnt werent cant couldnt
wont wouldnt shouldnt hasnt havent hadnt also get got getting go going really yeah yes oh ok okay hey hi
thanks thank wow lot lots much many may might must shall let lets s t d ll m re ve`
	m := map[string]struct{}{}
	for _, w := range strings.Fields(list) {
		m[w] = struct{}{}
	}
	return m
}()
