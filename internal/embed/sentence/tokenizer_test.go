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
		if len(g.IDs) > maxPieces {
			if got := tok.encode(g.Text, maxPieces); !slices.Equal(got, g.IDs[:maxPieces]) {
				t.Errorf("encode(%q, %d) is not the first %d ids", g.Text, maxPieces, maxPieces)
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
		if c := tok.encode(s, 3); len(c) > 3 || !slices.Equal(c, ids[:min(3, len(ids))]) {
			t.Fatalf("encode(%q, 3) = %v, not a prefix of %v", s, c, ids)
		}
	})
}
