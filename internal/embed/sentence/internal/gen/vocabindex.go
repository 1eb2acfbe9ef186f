package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// reservedPieces is how many leading vocabulary entries (<unk>, <s>, </s>
// and three extra ids) the tokenizer never produces but as <unk> (id 0):
// they are left out of the index's sorted pieces.
const reservedPieces = 6

// vocabIndex returns vocab.idx, the index package sentence's tokenizer
// reads in place beside vocab.txt (its pieces stay in vocab.txt), so that
// it costs a process no heap and no time to build.
//
// Layout (little-endian; each array starts at a multiple of its element's
// size, given an 8-byte aligned file): the magic "USEVIDX1"; n, the number
// of ids, and m, the number of sorted pieces (uint32 each); then, per id in
// id order, each as one array of n: its piece's score (float64), offset in
// vocab.txt (uint32) and length in bytes (uint16); then sorted, m uint16:
// the ids the segmentation may use (not the reserved ones; of a piece
// listed twice, the later id, as the JS trie keeps) by piece bytewise, so
// that the pieces starting with a prefix are a run of it; then first, 257
// uint16: the pieces starting with byte b are sorted[first[b]:first[b+1]];
// last, per id, its piece's length in UTF-16 code units (uint8, at most
// 255: what the JS tokenizer's walk back steps by).
func vocabIndex(vocab []byte) ([]byte, error) {
	text := string(vocab)
	var (
		off   []uint32
		size  []uint16
		score []float64
		units []uint8
	)
	for id, at := 0, 0; at < len(text); id++ {
		line, _, _ := strings.Cut(text[at:], "\n")
		piece, s, ok := strings.Cut(line, "\t")
		if !ok || piece == "" || len(piece) > 0xffff || id > 0xffff {
			return nil, fmt.Errorf("vocabulary line %d: want piece<TAB>score", id+1)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("vocabulary line %d: %w", id+1, err)
		}
		u := 0
		for _, r := range piece {
			u += utf16.RuneLen(r)
		}
		off = append(off, uint32(at))
		size = append(size, uint16(len(piece)))
		score = append(score, f)
		units = append(units, uint8(min(u, 255)))
		at += len(line) + 1
	}
	n := len(off)
	if n <= reservedPieces {
		return nil, fmt.Errorf("vocabulary has %d pieces", n)
	}
	piece := func(id uint16) string { return text[off[id] : off[id]+uint32(size[id])] }
	var sorted []uint16
	for id := reservedPieces; id < n; id++ {
		sorted = append(sorted, uint16(id))
	}
	// By piece, and a piece listed twice by id descending, so that the
	// later id comes first and the others are dropped.
	slices.SortFunc(sorted, func(a, b uint16) int {
		if c := strings.Compare(piece(a), piece(b)); c != 0 {
			return c
		}
		return int(b) - int(a)
	})
	sorted = slices.CompactFunc(sorted, func(a, b uint16) bool { return piece(a) == piece(b) })
	var first [257]uint16
	k := 0
	for b := range 257 {
		for k < len(sorted) && int(piece(sorted[k])[0]) < b {
			k++
		}
		first[b] = uint16(k)
	}
	var out bytes.Buffer
	out.WriteString("USEVIDX1")
	le := binary.LittleEndian
	out.Write(le.AppendUint32(nil, uint32(n)))
	out.Write(le.AppendUint32(nil, uint32(len(sorted))))
	for _, v := range score {
		out.Write(le.AppendUint64(nil, math.Float64bits(v)))
	}
	for _, v := range off {
		out.Write(le.AppendUint32(nil, v))
	}
	for _, v := range size {
		out.Write(le.AppendUint16(nil, v))
	}
	for _, v := range sorted {
		out.Write(le.AppendUint16(nil, v))
	}
	for _, v := range first {
		out.Write(le.AppendUint16(nil, v))
	}
	out.Write(units)
	return out.Bytes(), nil
}
