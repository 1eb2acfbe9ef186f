package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/lexicon"
)

// ExcerptMinRunes is the length above which a recalled episode reaches a
// turn's prompt as an excerpt (excerptItem): the parts of it about the
// query, not the whole text. Shorter memories, and every memory that is not
// an episode, are shown whole.
const ExcerptMinRunes = 600

// ExcerptLabel is added to the label of a recalled memory shown as an
// excerpt.
const ExcerptLabel = "excerpt"

// ExcerptGap stands for the parts of a memory an excerpt leaves out.
const ExcerptGap = "…"

// RecallExcerptNote follows RecallTitle in the packet's title when some
// line is an excerpt.
const RecallExcerptNote = `; a line labelled "excerpt" holds only the parts of a long memory about this message (` + ExcerptGap + ` marks what was left out), and search_memory returns it whole`

// excerptMaxShare is the largest share of a memory's text an excerpt
// keeps: above it the memory is shown whole, as the cut saves little.
const excerptMaxShare = 0.9

// excerptContextRunes: a part an excerpt keeps for the query's words that
// is shorter than this brings the part after it, as context ("Yes, that
// one." says little alone; "Here are three:" introduces a list).
const excerptContextRunes = 120

// focus is what of a query an excerpt looks for in a memory: the words
// recall searched for it with, as recall reads the query: the stems of its
// content words, names included, and, when the query asks about a time,
// any mention of a time or date; failing those, the words the lexicon
// relates to its nouns and phrases, as the store's tuning weighs them (see
// kindTerms), which are many and loose ("check" brings "stop"). A nil
// focus finds nothing.
type focus struct {
	query    string
	w        relWeights
	stems    map[string]bool
	temporal bool
	// first[c] is set when some stem starts with the byte c: a word
	// starting otherwise is not stemmed (a stem keeps its word's first
	// letter), which saves most of the stemming of a long memory.
	first, kindFirst [256]bool
	// kinds is read from the lexicon when first needed (kindStems): the
	// lookups are most of what reading a query costs, and most excerpts
	// are found by the query's own words.
	kinds     map[string]bool
	kindsRead bool
}

// tuner is a store whose recall is tuned (its focus uses the same lexicon
// relations).
type tuner interface{ tuning() Tuning }

var _ tuner = (*VectorStore)(nil)

// tuning is the tuning of the local store that recalls the episodes.
func (s *SplitStore) tuning() Tuning {
	if t, ok := s.episodes.(tuner); ok {
		return t.tuning()
	}
	return DefaultTuning
}

// focusFor reads query as st's recall reads it (DefaultTuning's relations
// for a store that is not tuned).
func focusFor(st Store, query string) *focus {
	tune := DefaultTuning
	if t, ok := st.(tuner); ok {
		tune = t.tuning()
	}
	return newFocus(query, tune.relWeights())
}

// newFocus reads query: its content words' stems (stop words left out,
// unless the query has nothing else), and whether it asks about a time;
// the related words of the relations of non-zero weight in w are read
// when first needed.
func newFocus(query string, w relWeights) *focus {
	f := &focus{query: query, w: w, stems: map[string]bool{}, temporal: detectIntent(query).temporal}
	words := embed.Words(query)
	for _, x := range words {
		if !embed.IsStopWord(x) {
			f.stems[embed.Stem(x)] = true
		}
	}
	if len(f.stems) == 0 {
		for _, x := range words {
			f.stems[embed.Stem(x)] = true
		}
	}
	for st := range f.stems {
		f.first[st[0]] = true
	}
	return f
}

// kindStems returns the stems of the words the lexicon relates, by the
// relations of non-zero weight, to the longest phrase of up to
// maxKindPhrase content words at each position of the query, as kindTerms
// takes them, less the query's own stems.
func (f *focus) kindStems() map[string]bool {
	if f.kindsRead {
		return f.kinds
	}
	f.kindsRead = true
	if !f.w.any() {
		return nil
	}
	f.kinds = map[string]bool{}
	words := embed.Words(f.query)
	content := func(x string) bool { return !embed.IsStopWord(x) }
	for _, found := range kindPhrases(words, content, f.w) {
		for r, rw := range f.w {
			if rw <= 0 {
				continue
			}
			for k, stem := range found.Stems(lexicon.Relation(r)) {
				if !embed.IsStopWord(string(k)) && !f.stems[string(stem)] && len(stem) > 0 {
					f.kinds[string(stem)] = true
					f.kindFirst[stem[0]] = true
				}
			}
		}
	}
	return f.kinds
}

// holds reports whether s, a part of a memory's text, holds one of the
// query's words or, when the query asks about a time, a time.
func (f *focus) holds(s string) bool {
	if f == nil {
		return false
	}
	for _, x := range embed.Words(s) {
		if f.first[x[0]] && f.stems[embed.Stem(x)] {
			return true
		}
	}
	return f.temporal && mentionsTime(s)
}

// holdsKind reports whether s holds one of the words related to the
// query's (kindStems).
func (f *focus) holdsKind(s string) bool {
	if f == nil {
		return false
	}
	kinds := f.kindStems()
	if len(kinds) == 0 {
		return false
	}
	for _, x := range embed.Words(s) {
		if f.kindFirst[x[0]] && kinds[embed.Stem(x)] {
			return true
		}
	}
	return false
}

// excerptItem is memoryItem(m), with the text cut to an excerpt about f
// and labelled so when m is a long episode (see excerpt); a nil f cuts
// nothing.
func excerptItem(m Memory, f *focus) (evidence.Item, bool) {
	it := memoryItem(m)
	if f == nil || m.Kind != KindEpisode {
		return it, false
	}
	ex, ok := excerpt(m.Text, f)
	if !ok {
		return it, false
	}
	it.Text = strings.Join(strings.Fields(ex), " ")
	if it.Label == "" {
		it.Label = ExcerptLabel
	} else {
		it.Label += ", " + ExcerptLabel
	}
	return it, true
}

// excerpt returns the parts of text about f when text is longer than
// ExcerptMinRunes: its parts (sentences; a list item, a heading, a table
// or a code block whole: segment) that hold something f looks for (the
// query's own words or a time; only when none does, the words related to
// them), a short one (under excerptContextRunes) with the part after it
// for context, in their order, the gaps between them and at either end
// marked by ExcerptGap. ok is false, and the text is to be shown whole,
// when it is short, when no part holds what f looks for (the match cannot
// be located: the memory was recalled for its meaning, or for words of the
// memories told around it), or when the excerpt would keep more than
// excerptMaxShare of it.
func excerpt(text string, f *focus) (string, bool) {
	if utf8.RuneCountInString(text) <= ExcerptMinRunes {
		return "", false
	}
	parts := segment(text)
	hit := make([]bool, len(parts))
	found := false
	for i, p := range parts {
		hit[i] = f.holds(text[p.from:p.to])
		found = found || hit[i]
	}
	if !found { // the related words locate it, if anything does
		for i, p := range parts {
			hit[i] = f.holdsKind(text[p.from:p.to])
		}
	}
	keep := make([]bool, len(parts))
	found = false
	for i := range parts {
		if hit[i] {
			found = true
			keep[i] = true
			if i+1 < len(parts) && utf8.RuneCountInString(text[parts[i].from:parts[i].to]) < excerptContextRunes {
				keep[i+1] = true
			}
		}
	}
	if !found {
		return "", false
	}
	kept := 0
	for i, p := range parts {
		if keep[i] {
			kept += p.to - p.from
		}
	}
	if float64(kept) > excerptMaxShare*float64(len(text)) {
		return "", false
	}
	var out []string
	for i := 0; i < len(parts); {
		j := i
		for j+1 < len(parts) && keep[j+1] == keep[i] {
			j++
		}
		if keep[i] {
			out = append(out, text[parts[i].from:parts[j].to])
		} else {
			out = append(out, ExcerptGap)
		}
		i = j + 1
	}
	return strings.Join(out, " "), true
}

// span is a part of a text, text[from:to].
type span struct{ from, to int }

// segment splits text into the parts an excerpt keeps or leaves out, in
// order, without the white space between them: the sentences of its
// paragraphs, and whole (never cut mid-way) each list item with the
// indented lines that continue it, each heading, each table (consecutive
// lines starting with "|") and each fenced code block ("```" or "~~~" to
// the matching fence, or to the end of the text).
func segment(text string) []span {
	var lines []span
	for at := 0; at < len(text); {
		end := strings.IndexByte(text[at:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += at
		}
		lines = append(lines, span{at, end})
		at = end + 1
	}
	line := func(i int) string { return text[lines[i].from:lines[i].to] }
	trimmed := func(i int) string { return strings.TrimSpace(line(i)) }
	blank := func(i int) bool { return trimmed(i) == "" }
	var out []span
	whole := func(i, j int) { // lines i..j as one part
		out = append(out, trim(text, span{lines[i].from, lines[j].to}))
	}
	for i := 0; i < len(lines); {
		t := trimmed(i)
		switch {
		case t == "":
			i++
		case fence(t) != "":
			open := fence(t)
			j := i + 1
			for j < len(lines) && !closesFence(trimmed(j), open) {
				j++
			}
			j = min(j, len(lines)-1)
			whole(i, j)
			i = j + 1
		case strings.HasPrefix(t, "|"):
			j := i
			for j+1 < len(lines) && strings.HasPrefix(trimmed(j+1), "|") {
				j++
			}
			whole(i, j)
			i = j + 1
		case strings.HasPrefix(t, "#"):
			whole(i, i)
			i++
		case listItem(t):
			j := i
			for j+1 < len(lines) && !blank(j+1) && startsIndented(line(j+1)) && !block(trimmed(j+1)) {
				j++
			}
			whole(i, j)
			i = j + 1
		default:
			j := i
			for j+1 < len(lines) && !blank(j+1) && !block(trimmed(j+1)) {
				j++
			}
			out = append(out, sentences(text, span{lines[i].from, lines[j].to})...)
			i = j + 1
		}
	}
	return out
}

// block reports whether the trimmed line t starts a part of its own
// (a fence, a table row, a heading or a list item) rather than continuing
// a paragraph or a list item.
func block(t string) bool {
	return fence(t) != "" || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "#") || listItem(t)
}

// fence returns the fence a trimmed line opens a code block with ("```" or
// "~~~", however long), or "".
func fence(t string) string {
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return t[:n]
		}
	}
	return ""
}

// closesFence reports whether the trimmed line t closes a code block
// opened with open: a fence of the same character, at least as long, with
// nothing after it.
func closesFence(t, open string) bool {
	f := fence(t)
	return f != "" && f[0] == open[0] && len(f) >= len(open) && strings.TrimSpace(t[len(f):]) == ""
}

// listItem reports whether the trimmed line t starts a list item: "-", "*"
// or "+", or a number with "." or ")", then a space.
func listItem(t string) bool {
	if len(t) >= 2 && strings.ContainsRune("-*+", rune(t[0])) && t[1] == ' ' {
		return true
	}
	n := 0
	for n < len(t) && n < 9 && isDigit(t[n]) {
		n++
	}
	return n > 0 && n+1 < len(t) && (t[n] == '.' || t[n] == ')') && t[n+1] == ' '
}

// startsIndented reports whether the line starts with white space.
func startsIndented(l string) bool { return l != "" && (l[0] == ' ' || l[0] == '\t') }

// trim is sp without the white space at either end.
func trim(text string, sp span) span {
	for sp.from < sp.to {
		r, n := utf8.DecodeRuneInString(text[sp.from:sp.to])
		if !unicode.IsSpace(r) {
			break
		}
		sp.from += n
	}
	for sp.to > sp.from {
		r, n := utf8.DecodeLastRuneInString(text[sp.from:sp.to])
		if !unicode.IsSpace(r) {
			break
		}
		sp.to -= n
	}
	return sp
}

// abbreviations are words (lower-case, without the dot) a dot after which
// ends no sentence.
var abbreviations = map[string]bool{"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "st": true,
	"jr": true, "sr": true, "vs": true, "e.g": true, "i.e": true, "eg": true, "ie": true, "approx": true,
	"no": true, "inc": true, "ltd": true, "co": true, "mt": true, "ft": true, "fig": true, "cf": true}

// sentences splits the paragraph text[sp] into sentences: one ends after
// ".", "!", "?" or "…" (and any closing quotes, brackets or emphasis after
// it) followed by white space and a word that does not start lower-case,
// unless the dot ends an abbreviation or an initial, and right after a
// full-width "。", "！" or "？".
func sentences(text string, sp span) []span {
	var out []span
	from := sp.from
	for i := sp.from; i < sp.to; {
		r, n := utf8.DecodeRuneInString(text[i:sp.to])
		i += n
		switch r {
		case '。', '！', '？':
			for i < sp.to {
				c, m := utf8.DecodeRuneInString(text[i:sp.to])
				if !strings.ContainsRune("」』）\"'”’", c) {
					break
				}
				i += m
			}
			out = appendSpan(out, text, span{from, i})
			from = i
			continue
		case '.', '!', '?', '…':
		default:
			continue
		}
		end := i
		for end < sp.to {
			c, m := utf8.DecodeRuneInString(text[end:sp.to])
			if !strings.ContainsRune(`"')]*_”’`, c) {
				break
			}
			end += m
		}
		if end < sp.to {
			c, _ := utf8.DecodeRuneInString(text[end:sp.to])
			if !unicode.IsSpace(c) {
				continue
			}
		}
		next := end
		for next < sp.to {
			c, m := utf8.DecodeRuneInString(text[next:sp.to])
			if !unicode.IsSpace(c) {
				break
			}
			next += m
		}
		if next < sp.to {
			c, _ := utf8.DecodeRuneInString(text[next:sp.to])
			if unicode.IsLower(c) {
				continue
			}
		}
		if r == '.' && abbreviation(text[from:i-1]) {
			continue
		}
		out = appendSpan(out, text, span{from, end})
		from = end
		i = end
	}
	return appendSpan(out, text, span{from, sp.to})
}

// abbreviation reports whether s ends with an abbreviation or an initial
// (a single letter) that the dot after it belongs to.
func abbreviation(s string) bool {
	k := strings.LastIndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '.' })
	if k >= 0 {
		_, n := utf8.DecodeRuneInString(s[k:])
		k += n
	} else {
		k = 0
	}
	w := strings.ToLower(s[k:])
	if w == "" {
		return false
	}
	return utf8.RuneCountInString(w) == 1 || abbreviations[w]
}

// appendSpan appends sp, trimmed, unless it is empty.
func appendSpan(out []span, text string, sp span) []span {
	if sp = trim(text, sp); sp.to > sp.from {
		out = append(out, sp)
	}
	return out
}
