package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/reverie-ai/reverie/termtext"
)

// Limits of what a tool call shows (the rest is folded away).
const (
	maxArgsCells   = 100
	maxResultCells = 120
)

// sanitize makes text from the model or the server safe to print: escape
// sequences, other control characters and bidirectional overrides are
// dropped (termtext.Strip: they could move the cursor, retitle the window
// or reorder the line), CR LF and lone CR become LF, tabs stay.
func sanitize(s string) string {
	if strings.ContainsRune(s, '\r') {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return termtext.Strip(s)
}

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

// markdown renders replies for the terminal: headings, emphasis, inline
// code, fenced code blocks (kept as written), lists, block quotes, links
// (text and address), rules and tables, wrapped to the width. A line break
// in the text is a line break on the screen (as in chat apps: command
// answers such as /help and /status are one item a line), and a line's
// leading indentation is kept. Style "notty" (or
// "ascii", or any style when NO_COLOR is set) prints no escape sequences;
// "dark" and "light" use a few ANSI attributes. It is a small renderer of
// its own: a full Markdown engine with syntax highlighting (glamour,
// chroma) made the binary twice as large.
type markdown struct {
	style string // "dark", "light", "notty"
}

// sgr codes of one style.
type mdStyle struct {
	heading, bold, italic, code, quote, link, rule string
}

func (m *markdown) palette() (mdStyle, bool) {
	switch m.style {
	case "dark":
		return mdStyle{heading: "1;36", bold: "1", italic: "3", code: "38;5;215", quote: "2", link: "4;34", rule: "2"}, true
	case "light":
		return mdStyle{heading: "1;34", bold: "1", italic: "3", code: "38;5;130", quote: "2", link: "4;34", rule: "2"}, true
	}
	return mdStyle{}, false
}

func sgr(code, s string, on bool) string {
	if !on || code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// render returns text rendered as markdown in width cells.
func (m *markdown) render(text string, width int) string {
	text = sanitize(text)
	if width < 20 {
		width = 20
	}
	st, color := m.palette()
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence := t[:3]
			lang := strings.TrimSpace(t[3:])
			if lang != "" {
				out = append(out, sgr(st.quote, "  "+lang, color))
			}
			// A closing fence is the fence character alone (at least three);
			// "```text" inside the block is content, as in CommonMark.
			for i++; i < len(lines) && !closesFence(lines[i], fence); i++ {
				out = append(out, "  "+sgr(st.code, lines[i], color))
			}
		case t == "":
			if len(out) > 0 && out[len(out)-1] != "" {
				out = append(out, "")
			}
		case strings.HasPrefix(t, "#"):
			h := strings.TrimLeft(t, "#")
			if h == "" || h[0] != ' ' {
				out = append(out, plainLine(l, st, color, width))
				continue
			}
			out = append(out, sgr(st.heading, ansi.Wrap(strings.TrimSpace(h), width, ""), color))
		case t == "---" || t == "***" || t == "___":
			out = append(out, sgr(st.rule, strings.Repeat("─", min(width, 40)), color))
		case strings.HasPrefix(t, "> ") || t == ">":
			q := ansi.Wrap(inline(strings.TrimSpace(strings.TrimPrefix(t, ">")), st, color), width-2, "")
			for _, ql := range strings.Split(q, "\n") {
				out = append(out, sgr(st.quote, "│ ", color)+ql)
			}
		case tableRow(t) && i+1 < len(lines) && tableRule(lines[i+1]):
			j := i + 2
			for j < len(lines) && tableRow(strings.TrimSpace(lines[j])) {
				j++
			}
			out = append(out, table(lines[i:j], st, color, width)...)
			i = j - 1
		case listItem(l) != "":
			indent := len(l) - len(strings.TrimLeft(l, " "))
			marker, body := listItem(l), ""
			body = strings.TrimSpace(strings.TrimLeft(l, " ")[len(marker):])
			if marker == "-" || marker == "*" || marker == "+" {
				marker = "•"
			}
			pad := strings.Repeat(" ", min(indent, 8)+2)
			w := ansi.Wrap(inline(body, st, color), max(width-len(pad)-2, 10), "")
			for j, wl := range strings.Split(w, "\n") {
				if j == 0 {
					out = append(out, pad+marker+" "+wl)
				} else {
					out = append(out, pad+strings.Repeat(" ", utf8.RuneCountInString(marker)+1)+wl)
				}
			}
		default:
			out = append(out, plainLine(l, st, color, width))
		}
	}
	return strings.Trim(strings.Join(out, "\n"), "\n")
}

// plainLine renders a line of text, keeping its indentation (up to 8
// cells) on every wrapped row.
func plainLine(l string, st mdStyle, color bool, width int) string {
	t := strings.TrimLeft(l, " \t")
	pad := strings.Repeat(" ", min(ansi.StringWidth(strings.ReplaceAll(l[:len(l)-len(t)], "\t", "    ")), 8))
	t = strings.TrimRight(t, " \t")
	w := ansi.Wrap(inline(t, st, color), max(width-len(pad), 10), "")
	if pad == "" {
		return w
	}
	return pad + strings.ReplaceAll(w, "\n", "\n"+pad)
}

// tableRow reports whether a trimmed line is a row of a pipe table.
func tableRow(t string) bool { return len(t) > 1 && t[0] == '|' }

// tableRule reports whether line is a table's header rule (|---|:--:|).
func tableRule(line string) bool {
	t := strings.TrimSpace(line)
	if !tableRow(t) || !strings.Contains(t, "-") {
		return false
	}
	return strings.Trim(t, "|-: ") == ""
}

// cells splits a table row into its trimmed cells.
func cells(row string) []string {
	t := strings.TrimSpace(row)
	t = strings.TrimPrefix(t, "|")
	t = strings.TrimSuffix(t, "|")
	var out []string
	for _, c := range strings.Split(t, "|") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

// table renders a pipe table (header, rule, rows) as aligned columns; one
// too wide for the screen becomes one "header: cell" block a row.
func table(rows []string, st mdStyle, color bool, width int) []string {
	head := cells(rows[0])
	var body [][]string
	for _, r := range rows[2:] {
		body = append(body, cells(r))
	}
	n := len(head)
	for _, r := range body {
		n = max(n, len(r))
	}
	render := func(r []string) []string {
		out := make([]string, n)
		for i := range out {
			if i < len(r) {
				out[i] = inline(r[i], st, color)
			}
		}
		return out
	}
	h := render(head)
	bs := make([][]string, len(body))
	widths := make([]int, n)
	for i, c := range h {
		widths[i] = ansi.StringWidth(c)
	}
	for k, r := range body {
		bs[k] = render(r)
		for i, c := range bs[k] {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	total := 3 * (n - 1)
	for _, w := range widths {
		total += w
	}
	if total > width {
		var out []string
		for k, r := range bs {
			if k > 0 {
				out = append(out, "")
			}
			for i, c := range r {
				if c == "" {
					continue
				}
				label := ansi.Strip(h[i])
				if label == "" {
					label = fmt.Sprintf("%d", i+1)
				}
				out = append(out, ansi.Wrap(sgr(st.bold, label+":", color)+" "+c, width, ""))
			}
		}
		return out
	}
	line := func(r []string, bold bool) string {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString(" │ ")
			}
			cell := c
			if bold {
				cell = sgr(st.bold, c, color)
			}
			b.WriteString(cell)
			if i < n-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)))
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	out := []string{line(h, true)}
	var rule []string
	for _, w := range widths {
		rule = append(rule, strings.Repeat("─", w))
	}
	out = append(out, sgr(st.rule, strings.Join(rule, "─┼─"), color))
	for _, r := range bs {
		out = append(out, line(r, false))
	}
	return out
}

// closesFence reports whether line closes a code block opened by fence.
func closesFence(line, fence string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == ""
}

// listItem returns the marker of a list line ("-", "*", "+", "1.") or "".
func listItem(l string) string {
	t := strings.TrimLeft(l, " ")
	if len(t) >= 2 && strings.ContainsRune("-*+", rune(t[0])) && t[1] == ' ' {
		return t[:1]
	}
	n := 0
	for n < len(t) && n < 4 && t[n] >= '0' && t[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(t) && (t[n] == '.' || t[n] == ')') && t[n+1] == ' ' {
		return t[:n+1]
	}
	return ""
}

// inline renders **bold**, *italic*/_italic_, `code` and [text](url).
func inline(s string, st mdStyle, color bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
				b.WriteString(sgr(st.code, s[i+1:i+1+j], color))
				i += j + 2
				continue
			}
		case strings.HasPrefix(s[i:], "**") || strings.HasPrefix(s[i:], "__"):
			if j := strings.Index(s[i+2:], s[i:i+2]); j > 0 {
				b.WriteString(sgr(st.bold, inline(s[i+2:i+2+j], st, color), color))
				i += j + 4
				continue
			}
		case s[i] == '*' || s[i] == '_':
			word := i == 0 || s[i-1] == ' ' || s[i-1] == '('
			if j := strings.IndexByte(s[i+1:], s[i]); word && j > 0 && s[i+1] != ' ' {
				b.WriteString(sgr(st.italic, s[i+1:i+1+j], color))
				i += j + 2
				continue
			}
		case s[i] == '[':
			if j := strings.Index(s[i:], "]("); j > 0 {
				if k := strings.IndexByte(s[i+j+2:], ')'); k >= 0 {
					label, url := s[i+1:i+j], s[i+j+2:i+j+2+k]
					b.WriteString(inline(label, st, color))
					if url != "" && url != label {
						b.WriteString(" (" + sgr(st.link, url, color) + ")")
					}
					i += j + 3 + k
					continue
				}
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}
