package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"charm.land/glamour/v2"
	"github.com/charmbracelet/x/ansi"
)

// Limits of what a tool call shows (the rest is folded away).
const (
	maxArgsCells   = 100
	maxResultCells = 120
)

// sanitize makes text from the model or the server safe to print: escape
// sequences and other control characters are dropped (they could move the
// cursor, retitle the window or worse), CR LF and lone CR become LF, tabs
// stay.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }) &&
		utf8.ValidString(s) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, s)
}

// oneLine squeezes whitespace runs (newlines included) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// toolCallLine is how a started tool call is shown: its name and its
// arguments on one line, cut.
func toolCallLine(name string, args json.RawMessage) string {
	var b bytes.Buffer
	a := ""
	if len(args) > 0 && json.Compact(&b, args) == nil {
		a = b.String()
	}
	if a == "{}" || a == "null" {
		a = ""
	}
	line := sanitize(name)
	if a != "" {
		line += " " + ansi.Truncate(sanitize(a), maxArgsCells, "…")
	}
	return line
}

// toolResultLine folds a tool result to its first non-empty line, cut,
// with the number of lines left out.
func toolResultLine(result string) string {
	result = strings.TrimSpace(sanitize(result))
	if result == "" {
		return "(no output)"
	}
	lines := strings.Split(result, "\n")
	first := ""
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			first = strings.TrimSpace(l)
			break
		}
	}
	out := ansi.Truncate(first, maxResultCells, "…")
	if n := len(lines) - 1; n > 0 {
		out += fmt.Sprintf("  (+%d lines)", n)
	}
	return out
}

// markdown renders replies for the terminal, caching one renderer per
// style and width.
type markdown struct {
	style string // glamour standard style: "dark", "light", "notty", …
	width int
	r     *glamour.TermRenderer
}

// render returns text rendered as markdown in width cells, or the text
// itself, wrapped, when rendering fails.
func (m *markdown) render(text string, width int) string {
	text = sanitize(text)
	if width < 20 {
		width = 20
	}
	if m.r == nil || m.width != width {
		r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(m.style), glamour.WithWordWrap(width-4))
		if err != nil {
			return ansi.Wrap(text, width, "")
		}
		m.r, m.width = r, width
	}
	out, err := m.r.Render(text)
	if err != nil {
		return ansi.Wrap(text, width, "")
	}
	return strings.TrimRight(strings.TrimLeft(out, "\n"), "\n ")
}
