package prompt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Templates (prompts/COMPACTION_PROMPT.txt, DREAM_*.txt, SEED_*.txt, …) are
// plain text with optional placeholders. A placeholder is exactly
// "{" + one or more of [a-z_] + "}": "{content}", "{history}". Anything
// else in braces is literal text, so JSON examples such as
// {"decision": "keep_first"} or {Name} or { content } are never
// placeholders. Render substitutes each placeholder it has a value for; a
// value whose placeholder the template lacks is appended to the end
// (substitution-or-append, seeds 001/003), so a template can be free-form
// instructions without any placeholder.

// ErrUnknownPlaceholder is wrapped by validation errors for a placeholder
// the template's user does not supply.
var ErrUnknownPlaceholder = errors.New("unknown placeholder")

// ErrMissingPlaceholder is wrapped by validation errors for a required
// placeholder the template lacks.
var ErrMissingPlaceholder = errors.New("missing placeholder")

// TemplateError is one validation problem of a template file.
type TemplateError struct {
	File  string // as given to ValidateTemplate, or relative to ValidateDir's dir
	Line  int    // 1-based; 0 for a missing placeholder
	Token string // "{name}"
	Err   error  // ErrUnknownPlaceholder or ErrMissingPlaceholder
	// Allowed lists the placeholders the template may use.
	Allowed []string
}

func (e *TemplateError) Error() string {
	allowed := "none"
	if len(e.Allowed) > 0 {
		allowed = "{" + strings.Join(e.Allowed, "}, {") + "}"
	}
	if errors.Is(e.Err, ErrMissingPlaceholder) {
		return fmt.Sprintf("%s: %v %s (the template must contain it)", e.File, e.Err, e.Token)
	}
	return fmt.Sprintf("%s:%d: %v %s (allowed: %s)", e.File, e.Line, e.Err, e.Token, allowed)
}

func (e *TemplateError) Unwrap() error { return e.Err }

// placeholder is one {name} occurrence.
type placeholder struct {
	start, end int // byte range including braces
	name       string
}

// scanPlaceholders finds every {[a-z_]+} in text, in order.
func scanPlaceholders(text string) []placeholder {
	var out []placeholder
	for i := 0; i < len(text); i++ {
		if text[i] != '{' {
			continue
		}
		j := i + 1
		for j < len(text) && (text[j] >= 'a' && text[j] <= 'z' || text[j] == '_') {
			j++
		}
		if j > i+1 && j < len(text) && text[j] == '}' {
			out = append(out, placeholder{start: i, end: j + 1, name: text[i+1 : j]})
			i = j
		}
	}
	return out
}

// Render substitutes vars into template in one pass (a substituted value is
// never scanned again). Placeholders without a value are left as they are.
// Each var whose placeholder does not occur in the template is appended,
// after a blank line, in name order; empty values are not appended.
func Render(template string, vars map[string]string) string {
	phs := scanPlaceholders(template)
	used := make(map[string]bool, len(vars))
	var b strings.Builder
	b.Grow(len(template) + renderGrow(vars))
	pos := 0
	for _, p := range phs {
		v, ok := vars[p.name]
		if !ok {
			continue
		}
		b.WriteString(template[pos:p.start])
		b.WriteString(v)
		pos = p.end
		used[p.name] = true
	}
	b.WriteString(template[pos:])
	if len(used) == len(vars) {
		return b.String()
	}
	names := make([]string, 0, len(vars)-len(used))
	for name, v := range vars {
		if !used[name] && v != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := b.String()
	for _, name := range names {
		if strings.TrimSpace(out) != "" {
			out = strings.TrimRight(out, " \t\r\n") + "\n\n"
		} else {
			out = ""
		}
		out += vars[name]
	}
	return out
}

func renderGrow(vars map[string]string) int {
	n := 0
	for _, v := range vars {
		n += len(v) + 2
	}
	return n
}

// ValidateTemplate checks text (the content of file) against the
// placeholders its user supplies: each {name} in text must be in allowed,
// and each allowed name marked as required by a trailing "!" ("history!")
// must occur. It returns nil or
// the problems joined (each a *TemplateError naming file and token).
func ValidateTemplate(file, text string, allowed []string) error {
	names := make([]string, 0, len(allowed))
	var required []string
	for _, a := range allowed {
		name, req := strings.CutSuffix(a, "!")
		names = append(names, name)
		if req {
			required = append(required, name)
		}
	}
	var errs []error
	seen := map[string]bool{}
	for _, p := range scanPlaceholders(text) {
		seen[p.name] = true
		if slices.Contains(names, p.name) {
			continue
		}
		errs = append(errs, &TemplateError{
			File: file, Line: 1 + strings.Count(text[:p.start], "\n"),
			Token: "{" + p.name + "}", Err: ErrUnknownPlaceholder, Allowed: names,
		})
	}
	for _, r := range required {
		if !seen[r] {
			errs = append(errs, &TemplateError{File: file, Token: "{" + r + "}", Err: ErrMissingPlaceholder, Allowed: names})
		}
	}
	return errors.Join(errs...)
}

// BaseFile is the data-dir file whose conditional markers ValidateDir checks.
const BaseFile = "BASE_PROMPT.txt"

// ValidateDir validates the templates of a data dir at start-up. spec maps
// a slash-separated pattern relative to dir (path.Match syntax:
// "prompts/COMPACTION_PROMPT.txt", "prompts/SEED_*.txt") to the
// placeholders the files it matches may use (names, Required ones marked).
// Every existing file matching a pattern is checked with ValidateTemplate; a
// pattern that matches nothing is fine (the caller falls back to a built-in
// default). BASE_PROMPT.txt, when present, is checked for balanced
// conditional markers. All problems are returned joined, each naming the
// file (relative to dir) and the token or marker.
func ValidateDir(dir string, spec map[string][]string) error {
	var errs []error
	if data, err := os.ReadFile(filepath.Join(dir, BaseFile)); err == nil {
		if _, err := ApplyConditionals(string(data), nil); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", BaseFile, err))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("validate %s: %w", BaseFile, err))
	}
	patterns := make([]string, 0, len(spec))
	for p := range spec {
		patterns = append(patterns, p)
	}
	sort.Strings(patterns)
	root := os.DirFS(dir)
	for _, pattern := range patterns {
		if _, err := path.Match(pattern, ""); err != nil {
			errs = append(errs, fmt.Errorf("validate templates: bad pattern %q: %w", pattern, err))
			continue
		}
		files, err := fs.Glob(root, pattern)
		if err != nil {
			errs = append(errs, fmt.Errorf("validate templates %q: %w", pattern, err))
			continue
		}
		for _, f := range files {
			data, err := fs.ReadFile(root, f)
			if err != nil {
				errs = append(errs, fmt.Errorf("validate template %s: %w", f, err))
				continue
			}
			if err := ValidateTemplate(f, string(data), spec[pattern]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
