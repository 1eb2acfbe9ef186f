package config

import (
	"bytes"
	"strings"
)

// blankCommentLines returns data with every line that holds only a comment
// emptied (its newline kept, so every line and column stays where it was):
// goccy/go-yaml's lexer spends most of its time on comments, and the
// shipped config.yaml is mostly comments (parsing it took 3× as long).
//
// A line is left alone inside a block scalar (after a "|" or ">" header,
// where "#" is text) and from the first line whose quotes might open a
// scalar continued on the next lines (an odd number of ' or " before any
// comment, such as an apostrophe in a plain value): from there on the data
// is returned unchanged, so the result always parses to the same values.
func blankCommentLines(data []byte) []byte {
	if !bytes.Contains(data, []byte("#")) {
		return data
	}
	out := make([]byte, 0, len(data))
	block := -1          // indentation of a block scalar's header line; -1: not in one
	lastIndent := 0      // indentation of the last line with content
	opens := true        // whether that line opens a nested node (ends with ":" or is "-")
	entry := true        // whether it is a mapping or sequence entry (not a bare scalar)
	var pending []string // comment lines not yet written: blanked unless they interrupt a plain scalar
	flush := func(blank bool) {
		for _, c := range pending {
			if blank {
				if strings.HasSuffix(c, "\r\n") {
					out = append(out, '\r', '\n')
				} else if strings.HasSuffix(c, "\n") {
					out = append(out, '\n')
				}
			} else {
				out = append(out, c...)
			}
		}
		pending = pending[:0]
	}
	rest := data
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		text := strings.TrimRight(string(line), "\r\n")
		content := strings.TrimLeft(text, " \t")
		indent := len(text) - len(content)
		switch {
		case block >= 0 && (content == "" || indent > block):
			out = append(out, line...) // block scalar text
		case content == "":
			if len(pending) > 0 {
				pending = append(pending, string(line))
			} else {
				out = append(out, line...)
			}
		case strings.HasPrefix(content, "#"):
			block = -1
			pending = append(pending, string(line))
		default:
			block = -1
			value := content
			if i := strings.Index(value, " #"); i >= 0 {
				value = value[:i]
			}
			value = strings.TrimRight(value, " \t")
			// A more indented line after a value can continue it as a
			// plain scalar, which a comment line in between ends: keep those.
			next := isEntry(value)
			flush(entry && next && (opens || indent <= lastIndent))
			if strings.Count(value, `"`)%2 != 0 || strings.Count(value, "'")%2 != 0 {
				return append(out, rest...) // maybe a quoted scalar over several lines
			}
			lastIndent, opens = indent, strings.HasSuffix(value, ":") || value == "-"
			entry = next
			if fields := strings.Fields(value); len(fields) > 0 && isBlockHeader(fields[len(fields)-1]) {
				block, entry = indent, false // comments right after an empty block scalar stay
			}
			out = append(out, line...)
		}
		rest = rest[len(line):]
	}
	flush(false) // what ends the data is left as it is
	return out
}

// isEntry reports whether a line's content (without a trailing comment) is
// a mapping or sequence entry rather than the text of a scalar.
func isEntry(value string) bool {
	return strings.HasSuffix(value, ":") || strings.Contains(value, ": ") || value == "-" || strings.HasPrefix(value, "- ")
}

// isBlockHeader reports whether tok is a block scalar header: "|" or ">"
// with optional chomping and indentation indicators.
func isBlockHeader(tok string) bool {
	if tok == "" || (tok[0] != '|' && tok[0] != '>') || len(tok) > 3 {
		return false
	}
	for _, c := range tok[1:] {
		if c != '-' && c != '+' && (c < '1' || c > '9') {
			return false
		}
	}
	return true
}
