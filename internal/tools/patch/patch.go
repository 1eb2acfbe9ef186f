// Package patch parses and applies the text patch format used by coding
// agents ("*** Begin Patch" … "*** End Patch"). It is pure: parsing and
// applying work on strings; reading and writing files is the caller's job.
//
// Format:
//
//	*** Begin Patch
//	*** Add File: path/to/new.txt
//	+first line of the new file
//	+second line
//	*** Delete File: path/to/old.txt
//	*** Update File: path/to/file.go
//	*** Move to: path/to/renamed.go        (optional)
//	@@ func main() {                        (optional anchor line)
//	 context line (leading space)
//	-removed line
//	+added line
//	 context line
//	@@
//	-another hunk, found after the previous one
//	+replacement
//	*** End of File                         (optional: the hunk ends the file)
//	*** End Patch
//
// Each hunk's context and removed lines must appear in the file, in order,
// after the previous hunk. A text after "@@" names a line to find first; the
// hunk is then searched after it. Matching is exact first, then ignoring
// trailing whitespace, then ignoring leading and trailing whitespace. A hunk
// with only added lines is inserted after its anchor, or at the end of the
// file when it has none.
package patch

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoMatch is wrapped by Apply when a hunk's context is not in the file.
var ErrNoMatch = errors.New("hunk context not found")

// Kind is what a file operation does.
type Kind string

const (
	Add    Kind = "add"
	Delete Kind = "delete"
	Update Kind = "update"
)

// Op is one file operation of a patch.
type Op struct {
	Kind Kind
	Path string
	// MoveTo is the new path of an updated file ("" to keep it in place).
	MoveTo string
	// Content is the whole content of an added file.
	Content string
	// Hunks are the changes of an updated file.
	Hunks []Hunk
	// Line is the 1-based line of the operation's header in the patch.
	Line int
}

// LineKind marks a hunk line.
type LineKind byte

const (
	Context LineKind = ' '
	Removed LineKind = '-'
	Added   LineKind = '+'
)

// Line is one line of a hunk, without its marker.
type Line struct {
	Kind LineKind
	Text string
}

// Hunk is one contiguous change.
type Hunk struct {
	// Anchor is the text after "@@" ("" when none).
	Anchor string
	Lines  []Line
	// EndOfFile is set when the hunk was followed by "*** End of File".
	EndOfFile bool
	// Line is the 1-based line of the hunk's first line in the patch.
	Line int
}

// Patch is a parsed patch.
type Patch struct {
	Ops []Op
}

const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	addPrefix    = "*** Add File: "
	deletePrefix = "*** Delete File: "
	updatePrefix = "*** Update File: "
	movePrefix   = "*** Move to: "
	eofMarker    = "*** End of File"
)

// Parse parses text into a Patch. Errors name the offending patch line.
func Parse(text string) (Patch, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != beginMarker {
		return Patch{}, fmt.Errorf("patch must start with %q", beginMarker)
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1]) != endMarker {
		return Patch{}, fmt.Errorf("patch must end with %q", endMarker)
	}
	p := &parser{lines: lines[:len(lines)-1], pos: 1}
	var out Patch
	seen := map[string]int{}
	for p.pos < len(p.lines) {
		op, err := p.op()
		if err != nil {
			return Patch{}, err
		}
		for _, path := range []string{op.Path, op.MoveTo} {
			if path == "" {
				continue
			}
			if first, dup := seen[path]; dup {
				return Patch{}, fmt.Errorf("patch line %d: %s is already changed by the operation on line %d", op.Line, path, first)
			}
			seen[path] = op.Line
		}
		out.Ops = append(out.Ops, op)
	}
	if len(out.Ops) == 0 {
		return Patch{}, errors.New("patch contains no file operations")
	}
	return out, nil
}

type parser struct {
	lines []string
	pos   int // index into lines
}

func (p *parser) errf(format string, args ...any) error {
	return fmt.Errorf("patch line %d: %s", p.pos+1, fmt.Sprintf(format, args...))
}

func (p *parser) op() (Op, error) {
	line := p.lines[p.pos]
	header := p.pos + 1
	switch {
	case strings.HasPrefix(line, addPrefix):
		path, err := p.path(line, addPrefix)
		if err != nil {
			return Op{}, err
		}
		p.pos++
		var b strings.Builder
		for p.pos < len(p.lines) && !isHeader(p.lines[p.pos]) {
			l := p.lines[p.pos]
			if l == "" && p.onlyBlankUntilHeader() {
				p.pos++
				continue
			}
			if !strings.HasPrefix(l, "+") {
				return Op{}, p.errf("every line of an added file must start with \"+\", got %q", l)
			}
			b.WriteString(l[1:])
			b.WriteByte('\n')
			p.pos++
		}
		return Op{Kind: Add, Path: path, Content: b.String(), Line: header}, nil
	case strings.HasPrefix(line, deletePrefix):
		path, err := p.path(line, deletePrefix)
		if err != nil {
			return Op{}, err
		}
		p.pos++
		for p.pos < len(p.lines) && p.lines[p.pos] == "" && p.onlyBlankUntilHeader() {
			p.pos++
		}
		if p.pos < len(p.lines) && !isHeader(p.lines[p.pos]) {
			return Op{}, p.errf("a deleted file takes no content lines, got %q", p.lines[p.pos])
		}
		return Op{Kind: Delete, Path: path, Line: header}, nil
	case strings.HasPrefix(line, updatePrefix):
		path, err := p.path(line, updatePrefix)
		if err != nil {
			return Op{}, err
		}
		op := Op{Kind: Update, Path: path, Line: header}
		p.pos++
		if p.pos < len(p.lines) && strings.HasPrefix(p.lines[p.pos], movePrefix) {
			if op.MoveTo, err = p.path(p.lines[p.pos], movePrefix); err != nil {
				return Op{}, err
			}
			p.pos++
		}
		if err := p.hunks(&op); err != nil {
			return Op{}, err
		}
		if len(op.Hunks) == 0 && op.MoveTo == "" {
			return Op{}, fmt.Errorf("patch line %d: Update File %s has no hunks", header, path)
		}
		return op, nil
	default:
		return Op{}, p.errf("expected \"*** Add File: \", \"*** Update File: \" or \"*** Delete File: \", got %q", line)
	}
}

func (p *parser) path(line, prefix string) (string, error) {
	path := strings.TrimSpace(strings.TrimPrefix(line, prefix))
	if path == "" {
		return "", p.errf("missing file path after %q", strings.TrimSpace(prefix))
	}
	return path, nil
}

// onlyBlankUntilHeader reports whether the lines from the current position
// up to the next operation header (or the end) are all empty.
func (p *parser) onlyBlankUntilHeader() bool {
	for i := p.pos; i < len(p.lines) && !isHeader(p.lines[i]); i++ {
		if p.lines[i] != "" {
			return false
		}
	}
	return true
}

func isHeader(line string) bool {
	return strings.HasPrefix(line, addPrefix) || strings.HasPrefix(line, deletePrefix) ||
		strings.HasPrefix(line, updatePrefix)
}

func (p *parser) hunks(op *Op) error {
	var cur *Hunk
	bare := 0 // trailing context lines that were empty lines in the patch
	flush := func() error {
		if cur == nil {
			return nil
		}
		// Blank lines separating operations are not context.
		cur.Lines = cur.Lines[:len(cur.Lines)-bare]
		bare = 0
		changed := false
		for _, l := range cur.Lines {
			if l.Kind != Context {
				changed = true
				break
			}
		}
		if !changed {
			return fmt.Errorf("patch line %d: hunk changes nothing (no \"-\" or \"+\" lines)", cur.Line)
		}
		op.Hunks = append(op.Hunks, *cur)
		cur = nil
		return nil
	}
	for p.pos < len(p.lines) && !isHeader(p.lines[p.pos]) {
		line := p.lines[p.pos]
		switch {
		case line == "@@" || strings.HasPrefix(line, "@@ "):
			if err := flush(); err != nil {
				return err
			}
			anchor := strings.TrimSpace(strings.TrimPrefix(line, "@@"))
			// Tolerate unified-diff style "@@ -1,3 +1,4 @@" headers: no anchor.
			if strings.HasPrefix(anchor, "-") && strings.HasSuffix(anchor, "@@") {
				anchor = ""
			}
			cur = &Hunk{Anchor: anchor, Line: p.pos + 1}
		case strings.TrimSpace(line) == eofMarker:
			if cur == nil {
				return p.errf("%q outside a hunk", eofMarker)
			}
			cur.EndOfFile = true
			if err := flush(); err != nil {
				return err
			}
		case strings.HasPrefix(line, movePrefix):
			return p.errf("%q must directly follow its \"*** Update File:\" line", strings.TrimSpace(movePrefix))
		default:
			if cur == nil {
				cur = &Hunk{Line: p.pos + 1}
			}
			if line == "" {
				// Models often drop the space of an empty context line.
				cur.Lines = append(cur.Lines, Line{Kind: Context})
				bare++
				break
			}
			bare = 0
			kind := LineKind(line[0])
			if kind != Context && kind != Removed && kind != Added {
				return p.errf("hunk lines must start with \" \", \"-\" or \"+\", got %q", line)
			}
			cur.Lines = append(cur.Lines, Line{Kind: kind, Text: line[1:]})
		}
		p.pos++
	}
	return flush()
}

// Apply applies hunks to original and returns the new content. Line endings
// of the original (LF or CRLF) are kept, and the result ends with a newline
// unless it is empty. It returns an error wrapping ErrNoMatch when a hunk's
// anchor or context cannot be found.
func Apply(original string, hunks []Hunk) (string, error) {
	eol := "\n"
	if strings.Contains(original, "\r\n") {
		eol = "\r\n"
		original = strings.ReplaceAll(original, "\r\n", "\n")
	}
	lines := strings.Split(original, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type replacement struct {
		start, n int
		with     []string
	}
	var reps []replacement
	cursor := 0
	for i, h := range hunks {
		var old, repl []string
		for _, l := range h.Lines {
			if l.Kind != Added {
				old = append(old, l.Text)
			}
			if l.Kind != Removed {
				repl = append(repl, l.Text)
			}
		}
		anchored := false
		if h.Anchor != "" {
			at := seek(lines, []string{h.Anchor}, cursor, false)
			if at < 0 {
				return "", fmt.Errorf("hunk %d (patch line %d): anchor %q: %w", i+1, h.Line, h.Anchor, ErrNoMatch)
			}
			cursor = at + 1
			anchored = true
		}
		if len(old) == 0 {
			at := len(lines)
			if anchored && !h.EndOfFile {
				at = cursor
			}
			reps = append(reps, replacement{start: at, with: repl})
			cursor = at
			continue
		}
		at := seek(lines, old, cursor, h.EndOfFile)
		if at < 0 {
			return "", fmt.Errorf("hunk %d (patch line %d): %w after line %d; the file has no lines matching:\n%s",
				i+1, h.Line, ErrNoMatch, cursor, quote(old))
		}
		reps = append(reps, replacement{start: at, n: len(old), with: repl})
		cursor = at + len(old)
	}
	out := make([]string, 0, len(lines)+8)
	prev := 0
	for _, r := range reps {
		out = append(out, lines[prev:r.start]...)
		out = append(out, r.with...)
		prev = r.start + r.n
	}
	out = append(out, lines[prev:]...)
	if len(out) == 0 {
		return "", nil
	}
	return strings.Join(out, eol) + eol, nil
}

// seek finds want in lines at or after from, trying exact, trailing-space
// insensitive and then surrounding-space insensitive comparison. With eof it
// first tries the position that ends the file.
func seek(lines, want []string, from int, eof bool) int {
	if len(want) > len(lines) {
		return -1
	}
	for _, eq := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return strings.TrimRight(a, " \t") == strings.TrimRight(b, " \t") },
		func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
	} {
		if eof {
			if at := len(lines) - len(want); at >= from && matchAt(lines, want, at, eq) {
				return at
			}
		}
		for at := from; at+len(want) <= len(lines); at++ {
			if matchAt(lines, want, at, eq) {
				return at
			}
		}
	}
	return -1
}

func matchAt(lines, want []string, at int, eq func(a, b string) bool) bool {
	for j, w := range want {
		if !eq(lines[at+j], w) {
			return false
		}
	}
	return true
}

func quote(lines []string) string {
	const maxShown = 12
	var b strings.Builder
	for i, l := range lines {
		if i == maxShown {
			fmt.Fprintf(&b, "  … (%d more lines)\n", len(lines)-maxShown)
			break
		}
		b.WriteString("  | ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}
