package prompt

import (
	"errors"
	"fmt"
	"strings"
)

// Conditional sections of BASE_PROMPT.txt keep instructions about a tool out
// of the prompt of a worker that does not have the tool:
//
//	<!-- if tool:spawn_sub_session -->
//	## Delegation
//	…
//	<!-- end -->
//	<!-- if !tool:spawn_sub_session -->
//	You cannot delegate; do the work yourself.
//	<!-- end -->
//
// "if tool:NAME" keeps the block when NAME is among the available tools,
// "if !tool:NAME" when it is not. Blocks do not nest. Spaces inside the
// comment are free ("<!--if tool:x-->" works). A marker alone on its line is
// removed with its line; where a removed block leaves more than one blank
// line, the run is reduced to one blank line. Other HTML comments are kept.

// ErrMarker is wrapped by the errors of ApplyConditionals for unbalanced,
// nested or malformed markers.
var ErrMarker = errors.New("bad conditional marker")

// markerKind classifies an HTML comment.
type markerKind int

const (
	notMarker markerKind = iota
	ifMarker
	endMarker
	badMarker
)

// classify parses the inside of "<!-- … -->": "if tool:NAME",
// "if !tool:NAME", "end", or something that tries to be a marker ("if …",
// "endif") but is malformed. Any other comment is not a marker.
func classify(inner string) (kind markerKind, negate bool, tool string) {
	inner = strings.TrimSpace(inner)
	switch {
	case inner == "end":
		return endMarker, false, ""
	case inner == "endif":
		return badMarker, false, ""
	case !strings.HasPrefix(inner, "if"):
		return notMarker, false, ""
	}
	rest := inner[2:]
	if rest != "" && isToolNameByte(rest[0]) {
		return notMarker, false, "" // "iffy", "if_…": a word, not a marker
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "!") {
		negate, rest = true, strings.TrimSpace(rest[1:])
	}
	name, ok := strings.CutPrefix(rest, "tool:")
	if !ok || name == "" {
		return badMarker, false, ""
	}
	for i := 0; i < len(name); i++ {
		if !isToolNameByte(name[i]) {
			return badMarker, false, ""
		}
	}
	return ifMarker, negate, name
}

// isToolNameByte is [A-Za-z0-9_.:-].
func isToolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '-'
}

// MarkerError locates a bad marker.
type MarkerError struct {
	Line   int    // 1-based line of the marker
	Marker string // the marker text
	Reason string
}

func (e *MarkerError) Error() string {
	return fmt.Sprintf("line %d: %s %s", e.Line, e.Reason, e.Marker)
}

func (e *MarkerError) Unwrap() error { return ErrMarker }

// ApplyConditionals keeps or drops the conditional blocks of base for the
// available tools. Unbalanced, nested or malformed markers are an error (a
// *MarkerError wrapping ErrMarker); ValidateDir reports them at start-up.
func ApplyConditionals(base string, tools []string) (string, error) {
	return applyConditionals(base, tools, true)
}

// applyConditionals does the work; when strict is false, marker errors are
// ignored: markers are dropped and all text is kept, so a prompt that
// slipped past validation loses no instructions.
func applyConditionals(base string, tools []string, strict bool) (string, error) {
	if !strings.Contains(base, "<!--") {
		return base, nil
	}
	type marker struct {
		start, end int // byte range, widened to the whole line when alone on it
		open       bool
		negate     bool
		tool       string
	}
	var markers []marker
	var firstErr error
	open := -1 // index in markers of the unclosed "if"
	for from := 0; ; {
		k := strings.Index(base[from:], "<!--")
		if k < 0 {
			break
		}
		start := from + k
		e := strings.Index(base[start+4:], "-->")
		if e < 0 {
			break
		}
		end := start + 4 + e + 3
		from = end
		kind, negate, tool := classify(base[start+4 : end-3])
		if kind == notMarker {
			continue
		}
		text := base[start:end]
		m := marker{start: start, end: end}
		line := 1 + strings.Count(base[:start], "\n")
		// A marker alone on its line takes the line with it.
		ls := strings.LastIndexByte(base[:m.start], '\n') + 1
		le := strings.IndexByte(base[m.end:], '\n')
		if le < 0 {
			le = len(base)
		} else {
			le = m.end + le + 1
		}
		if strings.TrimSpace(base[ls:m.start]) == "" && strings.TrimSpace(base[m.end:le]) == "" {
			m.start, m.end = ls, le
		}
		fail := func(reason string) {
			if firstErr == nil {
				firstErr = &MarkerError{Line: line, Marker: text, Reason: reason}
			}
		}
		switch {
		case kind == ifMarker && open >= 0:
			fail("nested conditional (close the previous block with <!-- end --> first):")
		case kind == ifMarker:
			m.open, m.negate, m.tool = true, negate, tool
			open = len(markers)
		case kind == endMarker:
			if open < 0 {
				fail("end without a matching if:")
			}
			open = -1
		default:
			fail(`malformed marker (want "<!-- if tool:NAME -->", "<!-- if !tool:NAME -->" or "<!-- end -->"):`)
		}
		markers = append(markers, m)
	}
	if len(markers) == 0 {
		return base, nil
	}
	if open >= 0 && firstErr == nil {
		m := markers[open]
		text := strings.TrimSpace(base[m.start:m.end])
		firstErr = &MarkerError{Line: 1 + strings.Count(base[:m.start], "\n"), Marker: text, Reason: "if without <!-- end -->:"}
	}
	if firstErr != nil && strict {
		return "", firstErr
	}
	have := make(map[string]bool, len(tools))
	for _, t := range tools {
		have[t] = true
	}
	var b strings.Builder
	b.Grow(len(base))
	pos, removed := 0, false
	for i := 0; i < len(markers); i++ {
		m := markers[i]
		b.WriteString(base[pos:m.start])
		pos = m.end
		if !m.open || firstErr != nil {
			continue // end marker, or lenient mode: drop markers, keep text
		}
		if have[m.tool] != m.negate {
			continue // keep the block: only the marker goes
		}
		// Drop the block through its end marker (or to the end of the text).
		removed = true
		if i+1 < len(markers) && !markers[i+1].open {
			pos = markers[i+1].end
			i++
		} else {
			pos = len(base)
		}
	}
	b.WriteString(base[pos:])
	out := b.String()
	if removed {
		out = collapseBlankLines(out)
	}
	return out, nil
}

// collapseBlankLines reduces runs of two or more blank lines to one.
func collapseBlankLines(s string) string {
	if !strings.Contains(s, "\n\n\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	nl := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			nl++
			if nl > 2 {
				continue
			}
		} else {
			nl = 0
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
