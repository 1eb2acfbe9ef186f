package embed

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCountWordsMatchesWords(t *testing.T) {
	for _, in := range []string{
		"", "  ...  ", "Hello, World!", "Caroline's dog", "I don't know", "Mel’s art",
		"in 2023 at 5pm", "Café crème", "Caroline's2 cats", "it'sgood", "rock'n'roll",
		"'quoted' words", "end's", "O'Brien's book", "x'", "a-b c_d", "日本語 text",
	} {
		t.Run(in, func(t *testing.T) {
			if got, want := CountWords(in), len(Words(in)); got != want {
				t.Errorf("CountWords(%q) = %d, want %d (%q)", in, got, want, Words(in))
			}
		})
	}
}

// wordsByRune is Words as it was written before EachWord, over the text's
// runes: the reference EachWord must split as.
func wordsByRune(text string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		case (r == '\'' || r == '’') && b.Len() > 0 && i+1 < len(rs) && unicode.IsLetter(rs[i+1]):
			j := i + 1
			for j < len(rs) && unicode.IsLetter(rs[j]) {
				j++
			}
			if strings.ToLower(string(rs[i+1:j])) == "s" {
				i = j - 1
				flush()
			}
		default:
			flush()
		}
	}
	flush()
	return out
}

// checkEachWord checks EachWord on in against wordsByRune, and that each
// offset is where a letter or digit starts, after the previous word's.
func checkEachWord(t *testing.T, in string) {
	t.Helper()
	var got []string
	last := -1
	EachWord(in, func(w string, at int) {
		got = append(got, w)
		if at <= last || at >= len(in) {
			t.Fatalf("EachWord(%q): %q at %d, after %d", in, w, at, last)
		}
		r, _ := utf8.DecodeRuneInString(in[at:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			t.Fatalf("EachWord(%q): %q at %d, where %q starts", in, w, at, r)
		}
		last = at
	})
	if want := wordsByRune(in); !slices.Equal(got, want) {
		t.Fatalf("EachWord(%q) = %q, want %q", in, got, want)
	}
}

func TestEachWord(t *testing.T) {
	for _, in := range []string{
		"", "  ...  ", "Hello, World!", "Caroline's dog", "I don't know", "Mel’s art", "CAROLINE'S",
		"in 2023 at 5pm", "Café crème", "Caroline's2 cats", "it'sgood", "rock'n'roll", "x's'",
		"'quoted' words", "end's", "O'Brien's book", "x'", "a-b c_d", "日本語 text", "bad \xff byte",
	} {
		t.Run(in, func(t *testing.T) { checkEachWord(t, in) })
	}
}

func FuzzEachWord(f *testing.F) {
	for _, s := range []string{"Caroline's dog", "I don't know", "Mel’s", "a\xffb", "x's's"} {
		f.Add(s)
	}
	f.Fuzz(checkEachWord)
}
