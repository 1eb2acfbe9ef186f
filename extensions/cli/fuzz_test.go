package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// sgrRE matches the only escape sequences the renderer may emit.
var sgrRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// unsafeRune reports a rune that must never reach the terminal: control
// characters other than newline and tab (escape included).
func unsafeRune(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }

// alnumCounts counts the letters and digits of s.
func alnumCounts(s string) map[rune]int {
	m := map[rune]int{}
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			m[r]++
		}
	}
	return m
}

// FuzzRenderMarkdown renders arbitrary model text in every style at a few
// widths. Properties: no panic; without colour the output holds no escape
// or control character; with colour the only escapes are the renderer's
// own SGR sequences; rendering loses no letter or digit of the text
// (markup goes, words stay); the same input renders the same.
func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range []string{
		"# Title\n\nSome **bold**, *italic*, `code` and [a link](https://example.com).\n\n- one\n- two\n  1. nested",
		"```go\nfunc main() {}\n```\nafter", "> quoted **text**\n>\n---\n***", "~~~\nunclosed fence",
		"\x1b]0;owned\x07\x1b[2Jtitle\r\nline", "**unclosed *mixed _markers `here", "[label](label) [x]( ) [](y)",
		"1) first\n22. second\n12345. not a list", "#no space\n####### deep", strings.Repeat("word ", 60),
		"\xff\xfe invalid utf-8 \u200b zero width 表格 wide", "* * *\n+ plus\n\t- tab indented",
		"```\ncode\n```trailing",
	} {
		f.Add(s, uint8(40))
	}
	styles := []string{"notty", "dark", "light"}
	f.Fuzz(func(t *testing.T, text string, w uint8) {
		width := int(w)
		in := alnumCounts(sanitize(text))
		for _, style := range styles {
			md := markdown{style: style}
			out := md.render(text, width)
			if out != md.render(text, width) {
				t.Fatalf("%s: rendering is not deterministic", style)
			}
			plain := out
			if style == "notty" {
				if strings.ContainsRune(out, '\x1b') {
					t.Fatalf("notty output has an escape: %q", out)
				}
			} else {
				plain = sgrRE.ReplaceAllString(out, "")
			}
			if i := strings.IndexFunc(plain, unsafeRune); i >= 0 {
				t.Fatalf("%s output has control character %q at %d: %q", style, plain[i], i, out)
			}
			if strings.Contains(text, "](") {
				// A link whose address is its text shows the text once.
				continue
			}
			got := alnumCounts(plain)
			for r, n := range in {
				if got[r] < n {
					t.Fatalf("%s: rendering %q lost %q (%d of %d kept): %q", style, text, r, got[r], n, out)
				}
			}
		}
	})
}

// FuzzToolLines folds arbitrary tool names, arguments and results the way
// the chat shows them. Properties: no panic, no escape or control
// character but tab, a result line is one line.
func FuzzToolLines(f *testing.F) {
	f.Add("search_web", []byte(`{"query":"tea"}`), "first line\nsecond\n")
	f.Add("x\x1b[31m", []byte(`{"a":"\u001b]0;t\u0007"}`), "\x1b[2J\r\n\r\nresult")
	f.Add("", []byte(`null`), "")
	f.Add("t", []byte(`{"a":`), strings.Repeat("long ", 100))
	f.Fuzz(func(t *testing.T, name string, args []byte, result string) {
		call := toolCallLine(name, json.RawMessage(args))
		if i := strings.IndexFunc(call, unsafeRune); i >= 0 {
			t.Fatalf("call line has a control character: %q", call)
		}
		res := toolResultLine(result)
		if strings.ContainsRune(res, '\n') || strings.IndexFunc(res, unsafeRune) >= 0 {
			t.Fatalf("result line %q is not one safe line", res)
		}
		if res == "" {
			t.Fatal("empty result line")
		}
	})
}
