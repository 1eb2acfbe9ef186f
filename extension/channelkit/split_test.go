package channelkit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	para := strings.Repeat("word ", 150) // 750 bytes
	code := "```python\n" + strings.Repeat("print('x')\n", 500) + "```\nafter"
	for _, tc := range []struct {
		name    string
		md      string
		limit   int
		measure func(string) int
		pieces  int // 0: more than one
	}{
		{"short", "hello", 100, Bytes, 1},
		{"blank", " \n ", 100, Bytes, -1},
		{"paragraphs in bytes", strings.Repeat(para+"\n\n", 12), 4096, Bytes, 0},
		{"code block in bytes", code, 1000, Bytes, 0},
		{"code block in UTF-16", code, 4096, UTF16Len, 0},
		{"surrogate pairs in UTF-16", strings.Repeat("😀", 3000), 4096, UTF16Len, 2},
		{"four-byte runes in bytes", strings.Repeat("😀", 3000), 4096, Bytes, 3},
		{"invalid UTF-8 in bytes", strings.Repeat("ab\xffcd", 500), 1000, Bytes, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pieces := Split(tc.md, tc.limit, tc.measure)
			switch {
			case tc.pieces == -1 && len(pieces) != 0:
				t.Fatalf("pieces for blank text: %q", pieces)
			case tc.pieces > 0 && len(pieces) != tc.pieces:
				t.Fatalf("%d pieces, want %d", len(pieces), tc.pieces)
			case tc.pieces == 0 && len(pieces) < 2:
				t.Fatalf("not split: %d piece(s)", len(pieces))
			}
			var rebuilt strings.Builder
			for i, p := range pieces {
				if n := tc.measure(p); n > tc.limit {
					t.Errorf("piece %d measures %d > %d", i, n, tc.limit)
				}
				if strings.TrimSpace(p) == "" {
					t.Errorf("piece %d is empty", i)
				}
				if utf8.ValidString(tc.md) && !utf8.ValidString(p) {
					t.Errorf("piece %d cuts a character", i)
				}
				if OpenFence(p) != "" {
					t.Errorf("piece %d leaves a code block open", i)
				}
				if i > 0 && strings.HasPrefix(tc.md, "```python") && !strings.HasPrefix(p, "```python\n") && strings.Contains(p, "print") {
					t.Errorf("piece %d does not reopen the code block with its language: %q", i, p[:20])
				}
				rebuilt.WriteString(p)
			}
			// Nothing lost or changed but the whitespace at the cuts and
			// the fences closed and reopened.
			strip := strings.NewReplacer("```python", "", "```", "", "\n", "", " ", "").Replace
			if strip(rebuilt.String()) != strip(tc.md) {
				t.Error("text lost or changed by splitting")
			}
		})
	}
}

// A long reply is cut at the last paragraph break within the limit, not in
// the middle of a paragraph.
func TestSplitPrefersParagraphs(t *testing.T) {
	para := strings.Repeat("word ", 150)
	pieces := Split(strings.Repeat(para+"\n\n", 12), 4096, UTF16Len)
	for i, p := range pieces[:len(pieces)-1] {
		if !strings.HasSuffix(p, "word") {
			t.Errorf("piece %d not cut at a paragraph boundary: …%q", i, p[len(p)-10:])
		}
	}
}

func TestUTF16Len(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{{"", 0}, {"abc", 3}, {"é", 1}, {"😀", 2}, {"a😀b", 4}} {
		if got := UTF16Len(tc.s); got != tc.want {
			t.Errorf("UTF16Len(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}
