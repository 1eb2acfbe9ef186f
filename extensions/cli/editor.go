package cli

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/reverie-ai/reverie/termtext"
)

// editor is the input line of the terminal chat: a rune buffer with a
// cursor that may hold several lines.
type editor struct {
	buf []rune
	pos int // cursor, 0..len(buf)
}

func (e *editor) String() string { return string(e.buf) }
func (e *editor) empty() bool    { return len(e.buf) == 0 }

// set replaces the text and puts the cursor at its end.
func (e *editor) set(s string) {
	e.buf = []rune(s)
	e.pos = len(e.buf)
}

func (e *editor) insert(s string) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	rs := []rune(cleanInput(s))
	e.buf = append(e.buf[:e.pos], append(rs, e.buf[e.pos:]...)...)
	e.pos += len(rs)
}

// cleanInput drops control characters other than newline and tab, and
// bidirectional overrides, from typed or pasted text.
func cleanInput(s string) string { return termtext.Strip(s) }

func (e *editor) backspace() {
	if e.pos > 0 {
		e.buf = append(e.buf[:e.pos-1], e.buf[e.pos:]...)
		e.pos--
	}
}

func (e *editor) del() {
	if e.pos < len(e.buf) {
		e.buf = append(e.buf[:e.pos], e.buf[e.pos+1:]...)
	}
}

func (e *editor) left() {
	if e.pos > 0 {
		e.pos--
	}
}

func (e *editor) right() {
	if e.pos < len(e.buf) {
		e.pos++
	}
}

// lineStart and lineEnd are the bounds of the cursor's line.
func (e *editor) lineStart() int {
	i := e.pos
	for i > 0 && e.buf[i-1] != '\n' {
		i--
	}
	return i
}

func (e *editor) lineEnd() int {
	i := e.pos
	for i < len(e.buf) && e.buf[i] != '\n' {
		i++
	}
	return i
}

func (e *editor) home() { e.pos = e.lineStart() }
func (e *editor) end()  { e.pos = e.lineEnd() }

// killBack deletes from the start of the line to the cursor (Ctrl-U).
func (e *editor) killBack() {
	s := e.lineStart()
	e.buf = append(e.buf[:s], e.buf[e.pos:]...)
	e.pos = s
}

// killForward deletes from the cursor to the end of the line (Ctrl-K).
func (e *editor) killForward() {
	end := e.lineEnd()
	e.buf = append(e.buf[:e.pos], e.buf[end:]...)
}

// wordBack is where the word before the cursor starts.
func (e *editor) wordBack() int {
	i := e.pos
	for i > 0 && unicode.IsSpace(e.buf[i-1]) {
		i--
	}
	for i > 0 && !unicode.IsSpace(e.buf[i-1]) {
		i--
	}
	return i
}

func (e *editor) wordForward() int {
	i := e.pos
	for i < len(e.buf) && unicode.IsSpace(e.buf[i]) {
		i++
	}
	for i < len(e.buf) && !unicode.IsSpace(e.buf[i]) {
		i++
	}
	return i
}

// deleteWord deletes the word before the cursor (Ctrl-W, Alt-Backspace).
func (e *editor) deleteWord() {
	s := e.wordBack()
	e.buf = append(e.buf[:s], e.buf[e.pos:]...)
	e.pos = s
}

// up moves to the previous line, keeping the column; false on the first
// line.
func (e *editor) up() bool {
	s := e.lineStart()
	if s == 0 {
		return false
	}
	col := e.pos - s
	prevEnd := s - 1
	prevStart := prevEnd
	for prevStart > 0 && e.buf[prevStart-1] != '\n' {
		prevStart--
	}
	e.pos = min(prevStart+col, prevEnd)
	return true
}

// down moves to the next line, keeping the column; false on the last line.
func (e *editor) down() bool {
	end := e.lineEnd()
	if end == len(e.buf) {
		return false
	}
	col := e.pos - e.lineStart()
	nextStart := end + 1
	nextEnd := nextStart
	for nextEnd < len(e.buf) && e.buf[nextEnd] != '\n' {
		nextEnd++
	}
	e.pos = min(nextStart+col, nextEnd)
	return true
}

// render lays the text out in rows of at most width cells, the first
// prefixed with prompt and the others with cont (same width), and returns
// the rows and the cursor's cell position in them.
func (e *editor) render(width int, prompt, cont string) (rows []string, curX, curY int) {
	pw := ansi.StringWidth(prompt)
	avail := max(width-pw-1, 8)
	var row strings.Builder
	rowWidth := 0
	prefix := prompt
	flush := func() {
		rows = append(rows, prefix+row.String())
		row.Reset()
		rowWidth = 0
		prefix = cont
	}
	for i, r := range e.buf {
		if i == e.pos {
			curX, curY = pw+rowWidth, len(rows)
		}
		if r == '\n' {
			flush()
			continue
		}
		if r == '\t' {
			r = ' '
		}
		w := ansi.StringWidth(string(r))
		if rowWidth+w > avail {
			flush()
			if i == e.pos {
				curX, curY = pw, len(rows)
			}
		}
		row.WriteRune(r)
		rowWidth += w
	}
	if e.pos == len(e.buf) {
		if rowWidth >= avail {
			flush()
		}
		curX, curY = pw+rowWidth, len(rows)
	}
	flush()
	return rows, curX, curY
}
