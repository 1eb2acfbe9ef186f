package sentence

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func testTokenizer(t testing.TB) *tokenizer {
	t.Helper()
	tok, err := newTokenizer(vocabText, vocabIndex)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestTokenizerGolden checks the ids of a few hundred texts (plain,
// punctuation, digits, accents, emoji, CJK, markdown, very long, empty)
// against those of the JS tokenizer, written by bench/embed/golden.js.
func TestTokenizerGolden(t *testing.T) {
	f, err := os.Open("testdata/tokens.golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok := testTokenizer(t)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var g struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		n++
		if got := tok.encode(g.Text, 0); !slices.Equal(got, g.IDs) {
			t.Errorf("encode(%q)\n got %v\nwant %v", g.Text, got, g.IDs)
		}
		// The first pieces, from prefixes of any length cut at spaces.
		for _, c := range []struct{ most, limit int }{{maxPieces, prefixBytes}, {maxPieces, 64}, {5, 16}, {1, 1}} {
			want := g.IDs[:min(c.most, len(g.IDs))]
			if got := tok.encodePrefix(g.Text, c.most, c.limit); !slices.Equal(got, want) {
				t.Errorf("encodePrefix(%q, %d, %d)\n got %v\nwant %v", g.Text, c.most, c.limit, got, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 300 {
		t.Fatalf("%d golden texts, want at least 300", n)
	}
}

func TestTokenizerCases(t *testing.T) {
	tok := testTokenizer(t)
	for _, tc := range []struct {
		name string
		text string
		want []int32
	}{
		{"empty", "", nil},
		{"space", " ", []int32{30, 30}},
		{"invalid UTF-8 is unknown", "\xff\xfe", []int32{30, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tok.encode(tc.text, 0); !slices.Equal(got, tc.want) {
				t.Fatalf("encode(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func FuzzTokenizer(f *testing.F) {
	tok := testTokenizer(f)
	for _, s := range []string{"", " ", "Hello, world!", "10:30 :)", "🇫🇷👨‍👩‍👧", "ﬁ①Ｆ", "\xff\x00", "▁▁"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.encode(s, 0)
		for _, id := range ids {
			if id < 0 || int(id) >= len(tok.score) {
				t.Fatalf("encode(%q): id %d out of range", s, id)
			}
		}
		for _, c := range []struct{ most, limit int }{{3, prefixBytes}, {3, 1}, {3, 8}, {20, 16}} {
			if got := tok.encodePrefix(s, c.most, c.limit); !slices.Equal(got, ids[:min(c.most, len(ids))]) {
				t.Fatalf("encodePrefix(%q, %d, %d) = %v, not the first ids of %v", s, c.most, c.limit, got, ids)
			}
		}
	})
}

// TestTokenizerInPlace checks that the tokenizer's index is a view of the
// embedded vocab.idx, not a copy in the heap, on a little-endian machine
// where the file is aligned as the linker places it.
func TestTokenizerInPlace(t *testing.T) {
	if !littleEndian {
		t.Skip("big-endian: the index is decoded into copies")
	}
	tok := testTokenizer(t)
	lo := uintptr(unsafe.Pointer(unsafe.StringData(vocabIndex)))
	hi := lo + uintptr(len(vocabIndex))
	for name, p := range map[string]unsafe.Pointer{
		"score": unsafe.Pointer(&tok.score[0]), "off": unsafe.Pointer(&tok.off[0]),
		"size": unsafe.Pointer(&tok.size[0]), "sorted": unsafe.Pointer(&tok.sorted[0]),
		"first": unsafe.Pointer(&tok.first[0]), "units": unsafe.Pointer(&tok.units[0]),
	} {
		if uintptr(p) < lo || uintptr(p) >= hi {
			t.Errorf("%s: a copy, not a view of vocab.idx", name)
		}
	}
}

func TestTokenizerIndexErrors(t *testing.T) {
	// at returns the index with the little-endian uint32 or uint16 at off
	// replaced by v.
	at := func(off, size int, v uint32) string {
		b := []byte(vocabIndex)
		if size == 4 {
			binary.LittleEndian.PutUint32(b[off:], v)
		} else {
			binary.LittleEndian.PutUint16(b[off:], uint16(v))
		}
		return string(b)
	}
	n := strings.Count(vocabText, "\n")
	m := int(binary.LittleEndian.Uint32([]byte(vocabIndex[12:])))
	offAt := 16 + 8*n
	sortedAt := offAt + 4*n + 2*n
	firstAt := sortedAt + 2*m
	for _, tc := range []struct {
		name, vocab, index string
	}{
		{"not an index", vocabText, "USEVIDX0" + vocabIndex[8:]},
		{"empty", vocabText, ""},
		{"another vocabulary", vocabText + "extra\t0\n", vocabIndex},
		{"truncated", vocabText, vocabIndex[:len(vocabIndex)-1]},
		{"piece elsewhere", vocabText, at(offAt+4*7, 4, 3)},
		{"piece past the text", vocabText, at(offAt+4*7, 4, uint32(len(vocabText)))},
		{"sorted id out of range", vocabText, at(sortedAt, 2, uint32(n))},
		{"bytes out of order", vocabText, at(firstAt+2*'a', 2, uint32(m))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := newTokenizer(tc.vocab, tc.index); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
