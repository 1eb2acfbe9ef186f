package channelkit

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Bytes measures text in bytes (Matrix's event size limit).
func Bytes(s string) int { return len(s) }

// UTF16Len measures text in UTF-16 code units (Telegram's message limit).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Split cuts markdown into pieces of at most limit, as measure counts
// (Bytes, UTF16Len), preferring paragraph boundaries, then line breaks,
// then spaces, and never cutting inside a character. A code block cut in
// two is closed and reopened with its fence line (its language too), so
// each piece renders alone. Blank text gives no pieces. limit must leave
// room for a fence line and a few characters (a few dozen or more).
func Split(md string, limit int, measure func(string) int) []string {
	md = strings.TrimSpace(md)
	if md == "" {
		return nil
	}
	if measure(md) <= limit {
		return []string{md}
	}
	var out []string
	var fence string // the open fence line carried into the next piece
	for md != "" {
		budget := limit - measure(fence) - 5 // room for the reopened and closing fences
		if measure(md) <= budget {
			out = append(out, fence+md)
			break
		}
		cut := cutPoint(md, budget, measure)
		piece, rest := md[:cut], strings.TrimLeft(md[cut:], "\n ")
		open := OpenFence(fence + piece)
		text := fence + strings.TrimRight(piece, "\n ")
		if open != "" {
			text += "\n```"
			fence = open + "\n"
		} else {
			fence = ""
		}
		out = append(out, text)
		md = rest
	}
	return out
}

// cutPoint is the byte offset at which to cut s so the first part
// measures at most budget: the last paragraph break, else line break, else
// space within the budget, else the budget itself (on a rune boundary).
func cutPoint(s string, budget int, measure func(string) int) int {
	max, n := 0, 0
	for max < len(s) {
		_, size := utf8.DecodeRuneInString(s[max:])
		if n += measure(s[max : max+size]); n > budget {
			break
		}
		max += size
	}
	head := s[:max]
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(head, sep); i > max/3 {
			return i
		}
	}
	if max == 0 { // a single rune over the budget cannot happen with sane limits
		_, size := utf8.DecodeRuneInString(s)
		return size
	}
	return max
}

// OpenFence returns the fence line of a code block left open in s, or "".
func OpenFence(s string) string {
	open := ""
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			if open == "" {
				open = t
			} else {
				open = ""
			}
		}
	}
	return open
}
