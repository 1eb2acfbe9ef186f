// Package frontmatter splits a Markdown file into its YAML front matter and
// its body, the format the agent ecosystem shares for skills (SKILL.md) and
// sub-agents (NAME.md): a first line "---", YAML, a line "---", then the
// Markdown body.
package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
)

// ErrUnclosed is a front matter whose closing "---" line is missing.
var ErrUnclosed = errors.New(`front matter is not closed by a "---" line`)

// Split returns the YAML between the opening and closing "---" lines and
// the body after them (line endings normalised to "\n"). A file that does
// not start with a "---" line has no front matter: meta is nil and body is
// the whole text. A leading byte-order mark is ignored.
func Split(data []byte) (meta []byte, body string, err error) {
	text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\uFEFF"))), "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return nil, text, nil
	}
	for off := 0; ; {
		line, after, found := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t") == "---" {
			return []byte(rest[:off]), after, nil
		}
		if !found {
			return nil, text, ErrUnclosed
		}
		off += len(line) + 1
	}
}

// Parse splits data and decodes its front matter into v (unknown keys are
// ignored: files written for other tools carry keys of their own). A file
// without front matter leaves v untouched.
func Parse(data []byte, v any) (body string, err error) {
	meta, body, err := Split(data)
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(meta)) == 0 {
		return body, nil
	}
	if err := yaml.Unmarshal(meta, v); err != nil {
		return "", fmt.Errorf("front matter: %s", firstLine(err.Error()))
	}
	return body, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
