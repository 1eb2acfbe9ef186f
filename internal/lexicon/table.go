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
// its name, a 0 byte and its tail. Tails: a word has none; a key has, for
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
	magic  = "RVLEX3\x00\x00"
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

// scan calls fn with the records of bucket b in order: their index, name
// (in buf: valid until fn returns) and the position of their tail, until
// fn returns false.
func (s section) scan(b int, buf []byte, fn func(i int, name []byte, tail int) bool) {
	p := s.body + int(u32(s.offs+4*b))
	for i := b * bucket; i < min(s.n, (b+1)*bucket); i++ {
		if i > b*bucket {
			buf = buf[:min(int(table[p]), len(buf))]
			p++
		} else {
			buf = buf[:0]
		}
		end := skipName(p)
		buf = append(buf, table[p:end-1]...)
		if !fn(i, buf, end) {
			return
		}
		p = s.tail(end)
	}
}

// find returns the tail position of the record named name.
func (s section) find(name string) (int, bool) {
	if s.n == 0 {
		return 0, false
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
	var buf [64]byte
	tail, found := 0, false
	s.scan(lo, buf[:0], func(_ int, n []byte, t int) bool {
		switch c := strings.Compare(string(n), name); {
		case c == 0:
			tail, found = t, true
			return false
		case c > 0:
			return false
		}
		return true
	})
	return tail, found
}

// word returns word id.
func (t tab) word(id int, buf []byte) []byte {
	var out []byte
	t.words.scan(id/bucket, buf, func(i int, n []byte, _ int) bool {
		if i == id {
			out = n
			return false
		}
		return true
	})
	return out
}

var parsed = sync.OnceValue(func() tab {
	if !strings.HasPrefix(table, magic) || len(table) < len(magic)+16 {
		panic("lexicon: words.bin is not a lexicon table")
	}
	t := tab{lists: len(magic) + 16}
	p := t.lists + int(u32(len(magic)+12))
	secs := []*section{&t.words, &t.keys, &t.plurals}
	tails := []func(int) int{func(p int) int { return p }, skipRelations, func(p int) int { return skipName(p) + 1 }}
	for i, s := range secs {
		m := int(u32(p))
		*s = section{n: int(u32(len(magic) + 4*i)), offs: p + 4, body: p + 4 + 4*m, tail: tails[i]}
		p = s.body + int(u32(s.offs+4*(m-1)))
	}
	return t
})
