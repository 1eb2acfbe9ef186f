// Command gen builds the lexicon's noun table (internal/lexicon/nouns.bin)
// from WordNet 3.0's noun files (Debian's wordnet-base installs them in
// /usr/share/wordnet):
//
//	go run ./internal/lexicon/gen [-wordnet DIR] [-o FILE] [-max N]
//
// For every noun lemma it writes the words naming its kinds and instances:
// for each of its senses that SemCor attests (WordNet's tagsense_cnt; the
// first sense when none is) whose hyponym closure (hyponyms and instance
// hyponyms, transitively) holds at most -max distinct words, the sense's
// synonyms and every word of that closure (a sense with no kinds adds
// nothing). A sense with a larger closure
// ("entity", "person", "event") names too many things to say anything
// about any of them and is left out. These two are the only rules: no
// word is named.
// Only one-token words ([a-z0-9]+ once lower-cased) are written as kinds,
// as a query matches single words; keys may be several words
// ("musical instrument"). noun.exc's irregular plurals of the keys are
// written too.
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
)

// DefaultMaxClosure is the largest hyponym closure, in distinct words, of a
// sense that is written.
const DefaultMaxClosure = 1000

func main() {
	dir := flag.String("wordnet", "/usr/share/wordnet", "WordNet 3.0 dictionary directory (data.noun, index.noun, noun.exc)")
	out := flag.String("o", "internal/lexicon/nouns.bin", "table to write")
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

// synset is one noun synset of data.noun.
type synset struct {
	words []string // its lemmas, raw
	hypo  []int    // hyponyms and instance hyponyms, by offset
}

// wordnet is what the generator reads of the noun files.
type wordnet struct {
	synsets map[int]*synset
	senses  map[string][]int    // index.noun lemma → its synsets attested in SemCor (at least the first), most frequent first
	plurals map[string][]string // noun.exc: inflected form → base forms
}

// build reads the noun files under dir and returns the table.
func build(dir string, maxClosure int) ([]byte, error) {
	wn, err := read(dir)
	if err != nil {
		return nil, err
	}
	return encode(entries(wn, maxClosure)), nil
}

// entries returns each key's kinds and the irregular plurals of the keys
// (inflected form → key).
func entries(wn *wordnet, maxClosure int) (map[string]map[string]bool, map[string]string) {
	c := closer{wn: wn, max: maxClosure, memo: map[int][]string{}, over: map[int]bool{}}
	kinds := map[string]map[string]bool{}
	for lemma, offs := range wn.senses {
		key, ok := keyOf(lemma)
		if !ok {
			continue
		}
		for _, o := range offs {
			words, ok := c.closure(o)
			if !ok || len(words) == 0 {
				continue // too general, or a sense with no kinds
			}
			for _, w := range append(wordsOf(wn.synsets[o]), words...) {
				if w == key {
					continue
				}
				if kinds[key] == nil {
					kinds[key] = map[string]bool{}
				}
				kinds[key][w] = true
			}
		}
	}
	plural := map[string]string{}
	// in sorted order, so that two forms with one key ("t-shirts",
	// "t_shirts") give the same table every time: the first wins
	for _, infl := range sortedKeys(wn.plurals) {
		k, ok := keyOf(infl)
		if _, done := plural[k]; !ok || done {
			continue
		}
		for _, b := range wn.plurals[infl] {
			if bk, ok := keyOf(b); ok && bk != k && kinds[bk] != nil {
				plural[k] = bk
				break
			}
		}
	}
	return kinds, plural
}

// closer computes bounded hyponym closures, memoised by synset.
type closer struct {
	wn   *wordnet
	max  int
	memo map[int][]string // synset → its closure's words, sorted
	over map[int]bool     // synset → its closure exceeds max
}

// closure returns the distinct one-token words of the synsets below o
// (hyponyms and instances, transitively), sorted; ok is false when they
// are more than c.max.
func (c *closer) closure(o int) ([]string, bool) {
	if c.over[o] {
		return nil, false
	}
	if w, ok := c.memo[o]; ok {
		return w, true
	}
	set := map[string]bool{}
	for _, h := range c.wn.synsets[o].hypo {
		sub, ok := c.closure(h)
		if !ok {
			c.over[o] = true
			return nil, false
		}
		for _, w := range append(wordsOf(c.wn.synsets[h]), sub...) {
			set[w] = true
		}
		if len(set) > c.max {
			c.over[o] = true
			return nil, false
		}
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	slices.Sort(out)
	c.memo[o] = out
	return out, true
}

// wordsOf returns the synset's lemmas that are one token, lower-cased.
func wordsOf(s *synset) []string {
	var out []string
	for _, raw := range s.words {
		w := strings.ToLower(raw)
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

// read parses data.noun, index.noun and noun.exc under dir.
func read(dir string) (*wordnet, error) {
	wn := &wordnet{synsets: map[int]*synset{}, senses: map[string][]int{}, plurals: map[string][]string{}}
	err := eachLine(filepath.Join(dir, "data.noun"), func(f []string) error {
		// offset lex_filenum ss_type w_cnt (word lex_id)… p_cnt (ptr offset pos src/tgt)… | gloss
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
			if (ptr[0] == "~" || ptr[0] == "~i") && ptr[2] == "n" {
				h, err := strconv.Atoi(ptr[1])
				if err != nil {
					return err
				}
				s.hypo = append(s.hypo, h)
			}
		}
		wn.synsets[off] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(dir, "index.noun"), func(f []string) error {
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
		for _, s := range f[start : start+max(min(tagged, sc), 1)] {
			o, err := strconv.Atoi(s)
			if err != nil {
				return err
			}
			if wn.synsets[o] == nil {
				return fmt.Errorf("synset %s not in data.noun", s)
			}
			wn.senses[f[0]] = append(wn.senses[f[0]], o)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(dir, "noun.exc"), func(f []string) error {
		if len(f) < 2 {
			return errors.New("short exception line")
		}
		wn.plurals[f[0]] = append(wn.plurals[f[0]], f[1:]...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return wn, nil
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
func encode(kinds map[string]map[string]bool, plural map[string]string) []byte {
	wordSet := map[string]bool{}
	for _, ws := range kinds {
		for w := range ws {
			wordSet[w] = true
		}
	}
	words := sortedKeys(wordSet)
	id := make(map[string]int, len(words))
	for i, w := range words {
		id[w] = i
	}
	keys := sortedKeys(kinds)
	plurals := sortedKeys(plural)

	keyTail := func(k string) []byte {
		ids := make([]int, 0, len(kinds[k]))
		for w := range kinds[k] {
			ids = append(ids, id[w])
		}
		slices.Sort(ids)
		b := binary.AppendUvarint(nil, uint64(len(ids)))
		prev := 0
		for _, i := range ids {
			b = binary.AppendUvarint(b, uint64(i-prev))
			prev = i
		}
		return b
	}
	out := []byte("RVLEX2\x00\x00")
	out = binary.LittleEndian.AppendUint32(out, uint32(len(words)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(keys)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(plurals)))
	out = appendSection(out, words, func(string) []byte { return nil })
	out = appendSection(out, keys, keyTail)
	out = appendSection(out, plurals, func(p string) []byte { return append([]byte(plural[p]), 0) })
	return out
}

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
