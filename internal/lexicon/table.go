package lexicon

import (
	_ "embed"
	"strings"
	"sync"
)

// The table's layout (counts and offsets are little-endian uint32):
//
//	"RVLEX3\0\0"
//	nWords nKeys nForms nLists
//	the id lists (nLists bytes)
//	three sections: words, keys, forms
//
// A section holds sorted names in buckets of 16 (the generator's bucket):
// the number of bucket offsets m, m offsets into the section's body (the
// last is its end), then the body. In a bucket, the first record is its
// name, a 0 byte and its tail; each other record is one byte saying how
// many leading bytes its name shares with the previous name, the rest of
// its name, a 0 byte and its tail. Tails: a word has its stem as
// internal/embed's Stem gives it: one byte, how many of the word's last
// bytes the stem drops (low 4 bits) and how many it adds (high 4 bits),
// then the added bytes; a key has, for
// each Relation in order, a uvarint: 0 for none, else 1 + the position of
// its id list in the lists; a form has its key, a 0 byte and
// 'n' when it is a noun's form (noun.exc), else 'v'. An id list is
// a uvarint n and n uvarint word ids, each the difference from the
// previous (the first from 0); keys with equal lists share one. Names are
// lower-case words joined by one space; a word's id is its position.
//
//go:embed words.bin
var table string

const (
	magic  = "RVLEX4\x00\x00"
	bucket = 16
)

// tab is the parsed header of table.
type tab struct {
	lists                int // position of the id lists
	words, keys, plurals section
}

// section is one section of table.
type section struct {
	n    int // records
	offs int // position of the bucket offsets
	body int // position of the body
	tail func(p int) int
}

// u32 reads the little-endian uint32 at table[p:].
func u32(p int) uint32 {
	return uint32(table[p]) | uint32(table[p+1])<<8 | uint32(table[p+2])<<16 | uint32(table[p+3])<<24
}

// uvarint decodes the uvarint at table[p:] and returns it and the position
// after it.
func uvarint(p int) (int, int) {
	var v, shift int
	for ; p < len(table); p++ {
		b := table[p]
		v |= int(b&0x7f) << shift
		if b < 0x80 {
			return v, p + 1
		}
		shift += 7
	}
	return v, p
}

// skipRelations returns the position after a key's tail at p.
func skipRelations(p int) int {
	for range numRelations {
		_, p = uvarint(p)
	}
	return p
}

// skipName returns the position after the 0-terminated name at p.
func skipName(p int) int { return p + strings.IndexByte(table[p:], 0) + 1 }

// first returns the name of bucket b's first record, in place.
func (s section) first(b int) string {
	p := s.body + int(u32(s.offs+4*b))
	return table[p : skipName(p)-1]
}

// bucketAt returns the position of bucket b's first record.
func (s section) bucketAt(b int) int { return s.body + int(u32(s.offs+4*b)) }

// record reads record i, at p, buf holding the name of record i−1 unless
// i starts a bucket: it returns the name (in buf's array while it fits)
// and the position of its tail.
func (s section) record(i, p int, buf []byte) ([]byte, int) {
	if i%bucket != 0 {
		buf = buf[:min(int(table[p]), len(buf))]
		p++
	} else {
		buf = buf[:0]
	}
	end := skipName(p)
	return append(buf, table[p:end-1]...), end
}

// seek returns the first record whose name is ≥ name: its name (in buf's
// array while it fits) and the position of its tail; ok is false when
// there is none.
func (s section) seek(name string, buf []byte) (rec []byte, tail int, ok bool) {
	if s.n == 0 {
		return nil, 0, false
	}
	// the last bucket whose first name is ≤ name
	lo, hi := 0, (s.n+bucket-1)/bucket
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if s.first(m) <= name {
			lo = m
		} else {
			hi = m
		}
	}
	p := s.bucketAt(lo)
	for i := lo * bucket; i < s.n; i++ { // on into the next bucket when all are < name
		buf, tail = s.record(i, p, buf)
		if string(buf) >= name {
			return buf, tail, true
		}
		p = s.tail(tail)
	}
	return nil, 0, false
}

// find returns the tail position of the record named name.
func (s section) find(name string) (int, bool) {
	var buf [64]byte
	rec, tail, ok := s.seek(name, buf[:0])
	return tail, ok && string(rec) == name
}

// hasPrefix reports whether some record's name starts with prefix.
func (s section) hasPrefix(prefix string) bool {
	var buf [64]byte
	rec, _, ok := s.seek(prefix, buf[:0])
	return ok && len(rec) >= len(prefix) && string(rec[:len(prefix)]) == prefix
}

// wordReader reads words by ascending id, as an id list holds them: a
// word after the one read before it in the same bucket is read on from
// there rather than from its bucket's first record. It holds no pointer
// but its table's, so reading writes none.
type wordReader struct {
	t    tab
	next int // id of the record at p; 0 with p 0: none read yet
	p    int
	n    int // length of record next−1's name, in buf
	buf  [maxWord]byte
	stem [maxWord + 16]byte
}

// maxWord is the longest word the table holds (the generator's bound).
const maxWord = 64

// read returns word id and its stem, valid until the next read.
func (r *wordReader) read(id int) (word, stem []byte) {
	w := r.t.words
	if r.p == 0 || id < r.next || id/bucket != r.next/bucket {
		b := id / bucket
		r.next, r.p = b*bucket, w.bucketAt(b)
	}
	var tail int
	for ; r.next <= id; r.next++ {
		word, tail = w.record(r.next, r.p, r.buf[:r.n])
		r.n = copy(r.buf[:], word)
		r.p = w.tail(tail)
	}
	word = r.buf[:r.n]
	c := table[tail]
	keep := len(word) - int(c&0xf)
	added := table[tail+1 : tail+1+int(c>>4)]
	return word, append(append(r.stem[:0], word[:keep]...), added...)
}

// skipStem returns the position after a word's tail at p.
func skipStem(p int) int { return p + 1 + int(table[p]>>4) }

var parsed = sync.OnceValue(func() tab {
	if !strings.HasPrefix(table, magic) || len(table) < len(magic)+16 {
		panic("lexicon: words.bin is not a lexicon table")
	}
	t := tab{lists: len(magic) + 16}
	p := t.lists + int(u32(len(magic)+12))
	secs := []*section{&t.words, &t.keys, &t.plurals}
	tails := []func(int) int{skipStem, skipRelations, func(p int) int { return skipName(p) + 1 }}
	for i, s := range secs {
		m := int(u32(p))
		*s = section{n: int(u32(len(magic) + 4*i)), offs: p + 4, body: p + 4 + 4*m, tail: tails[i]}
		p = s.body + int(u32(s.offs+4*(m-1)))
	}
	return t
})
