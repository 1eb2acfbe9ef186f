package memory

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	gmext "github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

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
// order, without the white space between them, reading it as Markdown
// (CommonMark with GitHub's tables, by goldmark): the sentences of each
// paragraph (in a block quote too), and whole (never cut mid-way) each
// heading, table, code block, HTML block and thematic break, and each list
// item's paragraphs, a nested list's items being parts of their own. What
// the parser keeps out of its blocks (a link reference definition) stays
// in the part before it: no text is lost.
func segment(text string) []span {
	doc := markdownBlocks().Parse(gmtext.NewReader([]byte(text)))
	var out []span
	var walk func(parent ast.Node, from, to int)
	walk = func(parent ast.Node, from, to int) {
		for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
			start := n.Pos()
			if n == parent.FirstChild() {
				start = from // with the container's marker ("- ", "> ")
			}
			if start < 0 {
				continue // a block of no text of its own
			}
			end := to // up to the next block that has a place
			for next := n.NextSibling(); next != nil; next = next.NextSibling() {
				if next.Pos() >= 0 {
					end = next.Pos()
					break
				}
			}
			switch n.Kind() {
			case ast.KindList, ast.KindListItem, ast.KindBlockquote:
				if n.HasChildren() {
					walk(n, start, end)
					continue
				}
				out = appendSpan(out, text, span{start, end}) // "- " alone
			case ast.KindParagraph:
				if parent.Kind() != ast.KindListItem {
					out = append(out, sentences(text, span{start, end})...)
					continue
				}
				out = appendSpan(out, text, span{start, end})
			default:
				out = appendSpan(out, text, span{start, end})
			}
		}
	}
	walk(doc, 0, len(text))
	return out
}

// markdownBlocks is the parser segment reads a text's blocks with: every
// CommonMark block and GitHub's tables, no inline markup (the parts need
// none).
var markdownBlocks = sync.OnceValue(func() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithParagraphTransformers(append(parser.DefaultParagraphTransformers(),
			util.Prioritized(gmext.NewTableParagraphTransformer(), 200))...),
	)
})

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
