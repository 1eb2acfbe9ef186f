// Package textclip shortens text for the places that show a bounded piece
// of it: a log attribute, a status line, a card's title, a golden manifest.
// It cuts on rune boundaries, never inside a UTF-8 sequence, and marks a cut
// with "…" so a reader knows the text goes on.
//
// Terminal safety is termtext's job; size bounds on bytes that leave the
// process (tool results, stored records) belong to their owners, which
// count bytes rather than runes.
package textclip

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis marks where Runes cut.
const Ellipsis = "…"

// OneLine collapses every run of white space (newlines included) into one
// space and trims both ends.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Runes returns s when it has at most n runes, else its first n runes
// followed by Ellipsis. n < 0 counts as 0.
func Runes(s string, n int) string {
	n = max(n, 0)
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + Ellipsis
		}
		i++
	}
	return s
}

// Line is OneLine then Runes: a summary of s on one line of at most n runes
// (plus the ellipsis).
func Line(s string, n int) string { return Runes(OneLine(s), n) }
