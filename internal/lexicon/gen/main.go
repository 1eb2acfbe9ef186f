// Command gen builds the lexicon's table (internal/lexicon/words.bin) from
// WordNet 3.0's data, index and exception files (Debian's wordnet-base
// installs them in /usr/share/wordnet):
//
//	go run ./internal/lexicon/gen [-wordnet DIR] [-o FILE] [-max N]
//
// For every lemma it writes, per relation (see lexicon.Relation), the
// one-token words WordNet relates to the senses it reads of the lemma:
//
//   - Kinds, for a noun: each sense's synonyms and its hyponym closure
//     (hyponyms and instance hyponyms, transitively), for each sense that
//     SemCor attests (WordNet's tagsense_cnt; the first sense when none
//     is) whose closure holds at most -max distinct words. A sense with a
//     larger closure ("entity", "person", "event") names too many things
//     to say anything about any of them and is left out.
//   - Derived, for a lemma of any part of speech that SemCor attests: the
//     words its attested senses' derivational pointers lead to (marry →
//     marriage, photography → photograph, photographer, married →
//     marriage through verb.exc's forms and the endings).
//
// Each related word is written with its stem as internal/embed's Stem
// gives it (the full-text index's terms are stems), so that a query does
// not stem the hundred or more words its nouns relate; a change to the
// stemmer changes the table, which TestTableIsGenerated then finds out of
// date.
//
// These bounds are the only rules: no word is named.
// Only one-token words ([a-z0-9]+ once lower-cased) are written as
// related words, as a query matches single words; keys may be several
// words ("musical instrument"). The exception lists' irregular forms of the
// keys (children → child, bought → buy) are written too, marked when they
// are a noun's (only a noun's form has Kinds).
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/reverie-ai/reverie/internal/embed"
)

// DefaultMaxClosure is the largest hyponym (or troponym) closure, in
// distinct words, of a sense that is written.
const DefaultMaxClosure = 1000

// The relations, in the table's order (lexicon.Relation).
const (
	relKinds = iota
	relDerived
	nRel
)

func main() {
	dir := flag.String("wordnet", "/usr/share/wordnet", "WordNet 3.0 dictionary directory (data.*, index.*, *.exc)")
	out := flag.String("o", "internal/lexicon/words.bin", "table to write")
	maxClosure := flag.Int("max", DefaultMaxClosure, "largest hyponym closure (distinct words) of a sense that is written")
	flag.Parse()
	b, err := build(*dir, *maxClosure)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lexicon gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "lexicon gen:", err)
		os.Exit(1)
	}
}

// ref names a synset: its part of speech (n, v, a, r; satellites are a)
// and its offset in that part's data file.
type ref struct {
	pos byte
	off int
}

// pointer is one pointer of a synset.
type pointer struct {
	sym      string
	to       ref
	src, dst int // word numbers for a lexical pointer (1-based); 0 for a semantic one
}

// synset is one synset of a data file.
type synset struct {
	words []string // its lemmas, raw
	ptrs  []pointer
}

// sense is one sense of a lemma: its synset and the lemma's number in it
// (1-based; 0 when not found).
type sense struct {
	ref  ref
	word int
}

// wordnet is what the generator reads.
type wordnet struct {
	synsets map[ref]*synset
	// senses: lemma → its senses read: for nouns those attested in
	// SemCor (at least the first); attested marks the senses of other
	// parts of speech and the nouns' attested ones.
	senses   map[string][]sense
	attested map[string][]sense
	forms    map[string][]string // exception lists: inflected form → base forms
	nounForm map[string]bool     // inflected forms of noun.exc
}

// parts are the data/index file suffixes and their pointer letters.
var parts = []struct {
	name string
	pos  byte
}{{"noun", 'n'}, {"verb", 'v'}, {"adj", 'a'}, {"adv", 'r'}}

// build reads the files under dir and returns the table.
func build(dir string, maxClosure int) ([]byte, error) {
	wn, err := read(dir)
	if err != nil {
		return nil, err
	}
	rels, forms := entries(wn, maxClosure)
	return encode(rels, forms)
}

// baseForm is what an irregular form is written with: its key and
// whether it is a noun's form.
type baseForm struct {
	key  string
	noun bool
}

// entries returns each key's related words by relation and the irregular
// forms of the keys (inflected form → key).
func entries(wn *wordnet, maxClosure int) (map[string]*[nRel]map[string]bool, map[string]baseForm) {
	c := closer{wn: wn, max: maxClosure, memo: map[ref][]string{}, over: map[ref]bool{}}
	rels := map[string]*[nRel]map[string]bool{}
	add := func(key string, r int, words ...string) {
		if len(words) == 0 {
			return
		}
		e := rels[key]
		if e == nil {
			e = &[nRel]map[string]bool{}
			rels[key] = e
		}
		if e[r] == nil {
			e[r] = map[string]bool{}
		}
		for _, w := range words {
			e[r][w] = true
		}
	}
	for lemma, ss := range wn.senses {
		key, ok := keyOf(lemma)
		if !ok {
			continue
		}
		for _, s := range ss {
			if s.ref.pos != 'n' {
				continue
			}
			words, ok := c.closure(s.ref, "~", "~i")
			if !ok || len(words) == 0 {
				continue // too general, or a sense with no kinds
			}
			add(key, relKinds, wordsOf(wn.synsets[s.ref])...)
			add(key, relKinds, words...)
		}
	}
	for lemma, ss := range wn.attested {
		key, ok := keyOf(lemma)
		if !ok {
			continue
		}
		for _, s := range ss {
			syn := wn.synsets[s.ref]
			for _, p := range syn.ptrs {
				to := wn.synsets[p.to]
				if p.sym != "+" || p.src != 0 && p.src != s.word {
					continue
				}
				if p.dst == 0 {
					add(key, relDerived, wordsOf(to)...)
				} else if p.dst <= len(to.words) {
					add(key, relDerived, wordsOf(&synset{words: to.words[p.dst-1 : p.dst]})...)
				}
			}
		}
	}
	// a key's own word says nothing more than the key
	for key, e := range rels {
		empty := true
		for r := range e {
			delete(e[r], key)
			empty = empty && len(e[r]) == 0
		}
		if empty {
			delete(rels, key)
		}
	}
	forms := map[string]baseForm{}
	// in sorted order, so that two forms with one key ("t-shirts",
	// "t_shirts") give the same table every time: the first wins
	for _, infl := range sortedKeys(wn.forms) {
		k, ok := keyOf(infl)
		if _, done := forms[k]; !ok || done {
			continue
		}
		for _, b := range wn.forms[infl] {
			if bk, ok := keyOf(b); ok && bk != k && rels[bk] != nil {
				forms[k] = baseForm{bk, wn.nounForm[infl]}
				break
			}
		}
	}
	return rels, forms
}

// closer computes bounded closures along pointers, memoised by synset.
type closer struct {
	wn   *wordnet
	max  int
	memo map[ref][]string // synset → its closure's words, sorted
	over map[ref]bool     // synset → its closure exceeds max
}

// closure returns the distinct one-token words of the synsets below o
// along the pointers syms (hyponyms and instances, or troponyms),
// transitively, sorted; ok is false when they are more than c.max.
func (c *closer) closure(o ref, syms ...string) ([]string, bool) {
	if c.over[o] {
		return nil, false
	}
	if w, ok := c.memo[o]; ok {
		return w, true
	}
	c.over[o] = true // a cycle (none in WordNet) ends as too general
	set := map[string]bool{}
	for _, p := range c.wn.synsets[o].ptrs {
		if !slices.Contains(syms, p.sym) || p.to.pos != o.pos {
			continue
		}
		sub, ok := c.closure(p.to, syms...)
		if !ok {
			return nil, false
		}
		for _, w := range append(wordsOf(c.wn.synsets[p.to]), sub...) {
			set[w] = true
		}
		if len(set) > c.max {
			return nil, false
		}
	}
	delete(c.over, o)
	out := sortedKeys(set)
	c.memo[o] = out
	return out, true
}

// wordsOf returns the synset's lemmas that are one token, lower-cased
// (an adjective's marker, "(a)", left out).
func wordsOf(s *synset) []string {
	var out []string
	for _, raw := range s.words {
		w := strings.ToLower(raw)
		if i := strings.IndexByte(w, '('); i >= 0 {
			w = w[:i]
		}
		if oneToken(w) {
			out = append(out, w)
		}
	}
	return out
}

// oneToken reports whether w is a non-empty run of [a-z0-9].
func oneToken(w string) bool {
	if w == "" {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// keyOf returns the key of a WordNet lemma: lower-cased, its words
// separated by one space ("musical_instrument" → "musical instrument",
// "t-shirt" → "t shirt", as a query's tokens join). ok is false for a
// lemma with other characters (apostrophes, dots, digits with
// punctuation).
func keyOf(lemma string) (string, bool) {
	lemma = strings.ToLower(lemma)
	if i := strings.IndexByte(lemma, '('); i >= 0 {
		lemma = lemma[:i]
	}
	parts := strings.FieldsFunc(lemma, func(r rune) bool { return r == '_' || r == '-' })
	if len(parts) == 0 {
		return "", false
	}
	for _, p := range parts {
		if !oneToken(p) {
			return "", false
		}
	}
	return strings.Join(parts, " "), true
}

// posOf maps a data file's ss_type or a pointer's part of speech to the
// data file's letter (an adjective satellite is in data.adj).
func posOf(s string) (byte, error) {
	switch s {
	case "n", "v", "a", "r":
		return s[0], nil
	case "s":
		return 'a', nil
	}
	return 0, fmt.Errorf("part of speech %q", s)
}

// read parses the data, index and exception files under dir.
func read(dir string) (*wordnet, error) {
	wn := &wordnet{synsets: map[ref]*synset{}, senses: map[string][]sense{}, attested: map[string][]sense{}, forms: map[string][]string{}, nounForm: map[string]bool{}}
	for _, part := range parts {
		err := eachLine(filepath.Join(dir, "data."+part.name), func(f []string) error {
			// offset lex_filenum ss_type w_cnt (word lex_id)… p_cnt (ptr offset pos src/tgt)… [frames] | gloss
			if len(f) < 4 {
				return errors.New("short synset line")
			}
			off, err := strconv.Atoi(f[0])
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(f[3], 16, 32)
			if err != nil {
				return err
			}
			i := 4 + 2*int(n)
			if i >= len(f) {
				return errors.New("short synset line")
			}
			s := &synset{}
			for j := range int(n) {
				s.words = append(s.words, f[4+2*j])
			}
			p, err := strconv.Atoi(f[i])
			if err != nil {
				return err
			}
			i++
			if i+4*p > len(f) {
				return errors.New("short pointer list")
			}
			for j := range p {
				ptr := f[i+4*j : i+4*j+4]
				o, err1 := strconv.Atoi(ptr[1])
				pos, err2 := posOf(ptr[2])
				st, err3 := strconv.ParseUint(ptr[3], 16, 16)
				if err := errors.Join(err1, err2, err3); err != nil {
					return err
				}
				s.ptrs = append(s.ptrs, pointer{sym: ptr[0], to: ref{pos, o}, src: int(st >> 8), dst: int(st & 0xff)})
			}
			wn.synsets[ref{part.pos, off}] = s
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, s := range wn.synsets {
		for _, p := range s.ptrs {
			if wn.synsets[p.to] == nil {
				return nil, fmt.Errorf("pointer to synset %c %08d not in the data files", p.to.pos, p.to.off)
			}
		}
	}
	for _, part := range parts {
		err := eachLine(filepath.Join(dir, "index."+part.name), func(f []string) error {
			// lemma pos synset_cnt p_cnt ptr_symbol… sense_cnt tagsense_cnt synset_offset…
			if len(f) < 4 {
				return errors.New("short index line")
			}
			sc, err1 := strconv.Atoi(f[2])
			pc, err2 := strconv.Atoi(f[3])
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			start := 4 + pc + 2
			if start+sc > len(f) {
				return errors.New("short index line")
			}
			// senses are listed most frequent first; tagged is how many of
			// them the SemCor corpus attests: the others are rare readings
			// ("trip" as a stumble) that would only add noise
			tagged, err := strconv.Atoi(f[start-1])
			if err != nil {
				return err
			}
			n := min(tagged, sc)
			if part.pos == 'n' {
				n = max(n, 1)
			}
			for i, s := range f[start : start+n] {
				o, err := strconv.Atoi(s)
				if err != nil {
					return err
				}
				r := ref{part.pos, o}
				syn := wn.synsets[r]
				if syn == nil {
					return fmt.Errorf("synset %s not in data.%s", s, part.name)
				}
				se := sense{ref: r, word: wordNumber(syn, f[0])}
				if part.pos == 'n' {
					wn.senses[f[0]] = append(wn.senses[f[0]], se)
				}
				if i < tagged {
					wn.attested[f[0]] = append(wn.attested[f[0]], se)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		err = eachLine(filepath.Join(dir, part.name+".exc"), func(f []string) error {
			if len(f) < 2 {
				return errors.New("short exception line")
			}
			wn.forms[f[0]] = append(wn.forms[f[0]], f[1:]...)
			if part.pos == 'n' {
				wn.nounForm[f[0]] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return wn, nil
}

// wordNumber returns the 1-based number of lemma (an index file's
// lower-case form) among the synset's words, 0 when it is not there.
func wordNumber(s *synset, lemma string) int {
	for i, w := range s.words {
		if j := strings.IndexByte(w, '('); j >= 0 {
			w = w[:j]
		}
		if strings.EqualFold(w, lemma) {
			return i + 1
		}
	}
	return 0
}

// eachLine calls fn with the fields of every line of the file that does
// not start with a space (WordNet's licence header does).
func eachLine(path string, fn func([]string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		line, err := r.ReadString('\n')
		if len(line) > 0 && line[0] != ' ' {
			if i := strings.Index(line, " | "); i >= 0 {
				line = line[:i]
			}
			if ferr := fn(strings.Fields(line)); ferr != nil {
				return fmt.Errorf("%s:%d: %w", path, n, ferr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// encode writes the table in the layout internal/lexicon reads (see its
// table.go).
func encode(rels map[string]*[nRel]map[string]bool, forms map[string]baseForm) ([]byte, error) {
	wordSet := map[string]bool{}
	for _, e := range rels {
		for _, ws := range e {
			for w := range ws {
				wordSet[w] = true
			}
		}
	}
	words := sortedKeys(wordSet)
	stems := make(map[string][]byte, len(words))
	for _, w := range words {
		t, err := stemTail(w)
		if err != nil {
			return nil, err
		}
		stems[w] = t
	}
	id := make(map[string]int, len(words))
	for i, w := range words {
		id[w] = i
	}
	keys := sortedKeys(rels)
	formNames := sortedKeys(forms)

	// id lists, each written once however many keys have it
	var lists []byte
	listAt := map[string]int{}
	list := func(ws map[string]bool) int {
		if len(ws) == 0 {
			return 0
		}
		ids := make([]int, 0, len(ws))
		for w := range ws {
			ids = append(ids, id[w])
		}
		slices.Sort(ids)
		b := binary.AppendUvarint(nil, uint64(len(ids)))
		prev := 0
		for _, i := range ids {
			b = binary.AppendUvarint(b, uint64(i-prev))
			prev = i
		}
		if p, ok := listAt[string(b)]; ok {
			return p
		}
		p := len(lists) + 1
		listAt[string(b)] = p
		lists = append(lists, b...)
		return p
	}
	keyTail := func(k string) []byte {
		var b []byte
		for _, ws := range rels[k] {
			b = binary.AppendUvarint(b, uint64(list(ws)))
		}
		return b
	}
	var keyBody []byte
	keySection := appendSection(nil, keys, keyTail) // fills lists first
	keyBody = keySection
	out := []byte(magic)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(words)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(keys)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(formNames)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(lists)))
	out = append(out, lists...)
	out = appendSection(out, words, func(w string) []byte { return stems[w] })
	out = append(out, keyBody...)
	out = appendSection(out, formNames, func(p string) []byte {
		pos := byte('v')
		if forms[p].noun {
			pos = 'n'
		}
		return append(append([]byte(forms[p].key), 0), pos)
	})
	return out, nil
}

// stemTail returns a word's tail: its stem as internal/embed's Stem gives
// it (the full-text index's terms are stems), stored so that a query need
// not stem each related word: one byte, the number of the word's last
// bytes the stem drops (low 4 bits) and the number of bytes it adds
// (high 4 bits), then the added bytes.
func stemTail(w string) ([]byte, error) {
	if len(w) > maxWord {
		return nil, fmt.Errorf("%q is longer than the table's words may be (%d bytes)", w, maxWord)
	}
	s := embed.Stem(w)
	keep := commonPrefix(w, s)
	drop, add := len(w)-keep, s[keep:]
	if drop > 15 || len(add) > 15 {
		return nil, fmt.Errorf("the stem of %q, %q, differs from it by more than a tail records", w, s)
	}
	return append([]byte{byte(drop) | byte(len(add))<<4}, add...), nil
}

// magic starts the table; its digit is the layout's version.
const magic = "RVLEX4\x00\x00"

// maxWord is the longest related word the table may hold (table.go reads
// a word into a buffer of this size).
const maxWord = 64

// bucket is how many records share one offset; within a bucket each
// record after the first stores only what differs from the one before.
const bucket = 16

// appendSection appends the sorted names with their tails as
// table.go's section layout says: the bucket offsets, then the buckets.
func appendSection(out []byte, names []string, tail func(string) []byte) []byte {
	var body []byte
	var offs []uint32
	for i, n := range names {
		if i%bucket == 0 {
			offs = append(offs, uint32(len(body)))
			body = append(body, n...)
		} else {
			p := commonPrefix(names[i-1], n)
			body = append(body, byte(p))
			body = append(body, n[p:]...)
		}
		body = append(body, 0)
		body = append(body, tail(n)...)
	}
	offs = append(offs, uint32(len(body)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(offs)))
	for _, o := range offs {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	return append(out, body...)
}

// commonPrefix returns the length of the longest common prefix of a and b,
// at most 255.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && n < 255 && a[n] == b[n] {
		n++
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
