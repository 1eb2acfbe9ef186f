// Package termtext makes text from outside safe to print on a terminal.
//
// Text that Reverie did not write — a model's reply, a memory, a Telegram
// display name, an error from a server — may hold escape sequences and other
// control characters that a terminal obeys: move the cursor, clear or rewrite
// lines, retitle the window, or (with bidirectional overrides) reorder what
// is shown. Printed raw, a stranger's display name can forge lines in the
// owner's terminal. Every terminal output of Reverie passes such text
// through Line (one field of a line: a name, a title, a table cell) or Text
// (a block of lines: a reply, a memory's text), which show each such
// character as a visible Go-style escape (`\x1b`, `\r`, `\u202e`) instead.
// The chat's rendering of replies (extensions/cli), where escapes would
// clutter the conversation, drops them with Strip.
package termtext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line escapes every control character of s, newlines and tabs too, and
// every bidirectional formatting character: the result stays on one line
// and shows what it holds. Invalid UTF-8 bytes are escaped as \xNN.
func Line(s string) string { return escape(s, false) }

// Text is Line for a block of lines: newlines and tabs stay (a CR LF pair
// becomes a newline); every other control character, lone CRs included, is
// escaped.
func Text(s string) string {
	return escape(strings.ReplaceAll(s, "\r\n", "\n"), true)
}

// Strip drops what Text escapes (newlines and tabs stay) and replaces
// invalid UTF-8 with U+FFFD.
func Strip(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unsafe(r, true) }) && utf8.ValidString(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafe(r, true) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func escape(s string, block bool) string {
	i := strings.IndexFunc(s, func(r rune) bool { return unsafe(r, block) })
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[0])|0x100, 16)[1:])
		case unsafe(r, block):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e', '\n'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// unsafe reports whether a terminal could act on r: C0 and C1 controls and
// DEL (unicode.IsControl), the line and paragraph separators, and the
// bidirectional embeddings, overrides, isolates and marks.
func unsafe(r rune, block bool) bool {
	switch {
	case block && (r == '\n' || r == '\t'):
		return false
	case unicode.IsControl(r):
		return true
	}
	switch r {
	case '\u2028', '\u2029', // line and paragraph separators
		'\u200e', '\u200f', '\u061c', // LRM, RLM, ALM
		'\u202a', '\u202b', '\u202c', '\u202d', '\u202e', // embeddings and overrides
		'\u2066', '\u2067', '\u2068', '\u2069': // isolates
		return true
	}
	return false
}
