package embed

import (
	"strings"
	"unicode"
)

// Words splits text into lower-cased word tokens: runs of letters and
// digits. Apostrophes inside a word are dropped together with common
// English clitics ("Caroline's" → "caroline", "don't" → "dont").
func Words(text string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := b.String()
		b.Reset()
		out = append(out, w)
	}
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		case (r == '\'' || r == '’') && b.Len() > 0 && i+1 < len(rs) && unicode.IsLetter(rs[i+1]):
			// possessive 's and clitics: "'s" ends the word, "n't"/"'re"/"'ll" are glued on
			j := i + 1
			for j < len(rs) && unicode.IsLetter(rs[j]) {
				j++
			}
			suffix := strings.ToLower(string(rs[i+1 : j]))
			if suffix == "s" {
				i = j - 1
				flush()
				continue
			}
			// keep the letters of other clitics attached ("don't" → "dont")
		default:
			flush()
		}
	}
	flush()
	return out
}

// Stem applies light English suffix stripping, enough to conflate plural,
// past and gerund forms ("paintings", "painted", "painting" → "paint").
// It is deliberately conservative: it never reduces a word below three
// letters, and plural forms always reach the same stem as the singular.
func Stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	w = stripPlural(w)
	type rule struct{ suf, rep string }
	rules := []rule{
		{"ational", "ate"}, {"fulness", "ful"}, {"iveness", "ive"}, {"ization", "ize"},
		{"ousness", "ous"}, {"ivity", ""}, {"ation", "ate"}, {"tion", "t"}, {"ement", ""},
		{"ment", ""}, {"ness", ""}, {"ful", ""}, {"ity", ""}, {"ive", ""}, {"ly", ""},
		{"ied", "y"}, {"ing", ""}, {"ed", ""}, {"er", ""},
	}
	for _, r := range rules {
		if !strings.HasSuffix(w, r.suf) {
			continue
		}
		base := w[:len(w)-len(r.suf)] + r.rep
		if len(base) < 3 || (r.suf == "ly" && len(base) < 4) {
			return w
		}
		if r.suf == "ing" || r.suf == "ed" || r.suf == "er" {
			// undouble a final consonant ("running" → "run")
			n := len(base)
			if base[n-1] == base[n-2] && !strings.ContainsRune("aeioulsz", rune(base[n-1])) {
				base = base[:n-1]
			}
		}
		return trimE(base)
	}
	return trimE(w)
}

func stripPlural(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"),
		strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s") && len(w) > 3:
		return w[:len(w)-1]
	}
	return w
}

// trimE removes a final silent e so that "bake"/"baking"/"baked" share a stem.
func trimE(w string) string {
	if len(w) > 3 && w[len(w)-1] == 'e' && !strings.HasSuffix(w, "ee") {
		return w[:len(w)-1]
	}
	return w
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
