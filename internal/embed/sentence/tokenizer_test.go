package sentence

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

func testTokenizer(t testing.TB) *tokenizer {
	t.Helper()
	tok, err := newTokenizer(vocabText)
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
