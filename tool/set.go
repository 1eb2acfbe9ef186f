package tool

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/reverie-ai/reverie/llm"
)

// ErrInvalidName is wrapped by CheckName's errors.
var ErrInvalidName = errors.New("invalid tool name")

// CheckName reports whether name is a valid tool name: 1 to 64 characters
// from [a-zA-Z0-9_-], the common denominator of the provider APIs.
func CheckName(name string) error {
	if !validName(name) {
		return fmt.Errorf("%w %q: want 1-64 characters from [a-zA-Z0-9_-]", ErrInvalidName, name)
	}
	return nil
}

// validName is `^[a-zA-Z0-9_-]{1,64}$` without a regular expression: the
// compiled {1,64} repetition kept 26 KB alive in every process
// (FuzzValidName checks the two agree).
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Spec is the description of t offered to a model.
func Spec(t Tool) llm.ToolSpec {
	return llm.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()}
}

// Set is an immutable, ordered collection of tools with unique, valid names.
// A Set is safe for concurrent use.
type Set struct {
	tools  []Tool
	byName map[string]Tool
}

// NewSet builds a Set, keeping the given order. It fails when a name is
// invalid or appears twice.
func NewSet(tools ...Tool) (*Set, error) {
	s := &Set{tools: make([]Tool, 0, len(tools)), byName: make(map[string]Tool, len(tools))}
	for _, t := range tools {
		if t == nil {
			return nil, errors.New("tool set: nil tool")
		}
		name := t.Name()
		if err := CheckName(name); err != nil {
			return nil, fmt.Errorf("tool set: %w", err)
		}
		if _, dup := s.byName[name]; dup {
			return nil, fmt.Errorf("tool set: duplicate tool name %q", name)
		}
		s.byName[name] = t
		s.tools = append(s.tools, t)
	}
	return s, nil
}

// Len is the number of tools.
func (s *Set) Len() int { return len(s.tools) }

// Get returns the tool called name.
func (s *Set) Get(name string) (Tool, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Tools returns the tools in order. The slice is a copy.
func (s *Set) Tools() []Tool { return slices.Clone(s.tools) }

// Names returns the tool names in order.
func (s *Set) Names() []string {
	out := make([]string, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.Name()
	}
	return out
}

// Specs returns the specs of the tools in order, ready for llm.Request.Tools.
func (s *Set) Specs() []llm.ToolSpec {
	out := make([]llm.ToolSpec, len(s.tools))
	for i, t := range s.tools {
		out[i] = Spec(t)
	}
	return out
}

// UnknownToolsError reports names that are not in a Set.
type UnknownToolsError struct {
	// Unknown are the names asked for that the set does not hold, in the
	// order they were asked for.
	Unknown []string
	// Available are the names the set does hold, in set order.
	Available []string
}

func (e *UnknownToolsError) Error() string {
	return fmt.Sprintf("unknown tools %s (available: %s)",
		strings.Join(quoteAll(e.Unknown), ", "), strings.Join(e.Available, ", "))
}

// Select returns the subset of s named by names, in s's order, ignoring
// repeated names. Names that are not in s are reported in an
// *UnknownToolsError; the returned Set still holds the known ones, so a
// caller may warn and carry on (as with hallucinated names from a model) or
// fail (as with names from configuration).
func (s *Set) Select(names []string) (*Set, error) {
	want := make(map[string]bool, len(names))
	var unknown []string
	for _, n := range names {
		if _, ok := s.byName[n]; !ok {
			if !slices.Contains(unknown, n) {
				unknown = append(unknown, n)
			}
			continue
		}
		want[n] = true
	}
	out := s.filter(func(t Tool) bool { return want[t.Name()] })
	if len(unknown) > 0 {
		return out, &UnknownToolsError{Unknown: unknown, Available: s.Names()}
	}
	return out, nil
}

// WithCategory returns the tools of s that carry category, in order.
func (s *Set) WithCategory(category string) *Set {
	return s.filter(func(t Tool) bool { return slices.Contains(CategoriesOf(t), category) })
}

func (s *Set) filter(keep func(Tool) bool) *Set {
	out := &Set{byName: map[string]Tool{}}
	for _, t := range s.tools {
		if keep(t) {
			out.tools = append(out.tools, t)
			out.byName[t.Name()] = t
		}
	}
	return out
}

// Profiles maps a profile name to the tools it grants, as written in
// configuration:
//
//	profiles:
//	  researcher: [search_web, fetch_url, read_file]
//	  operator: ["@execution", read_file]
//
// An entry is a tool name, or "@category" for every tool carrying that
// category (see WithCategories).
type Profiles map[string][]string

// ErrUnknownProfile is returned by Profiles.Resolve for a profile that is
// not defined.
var ErrUnknownProfile = errors.New("unknown tool profile")

// Resolve returns the tools of s granted by the profile called name, in s's
// order. An undefined profile yields ErrUnknownProfile; entries naming tools
// or categories that s does not hold yield an *UnknownToolsError (with the
// resolvable part still returned).
func (p Profiles) Resolve(name string, s *Set) (*Set, error) {
	entries, ok := p[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (defined: %s)", ErrUnknownProfile, name, strings.Join(p.Names(), ", "))
	}
	var names, unknown []string
	for _, e := range entries {
		cat, isCat := strings.CutPrefix(e, "@")
		if !isCat {
			names = append(names, e)
			continue
		}
		sub := s.WithCategory(cat)
		if sub.Len() == 0 {
			unknown = append(unknown, e)
			continue
		}
		names = append(names, sub.Names()...)
	}
	out, err := s.Select(names)
	var ute *UnknownToolsError
	if errors.As(err, &ute) {
		unknown = append(unknown, ute.Unknown...)
	}
	if len(unknown) > 0 {
		return out, fmt.Errorf("tool profile %q: %w", name, &UnknownToolsError{Unknown: unknown, Available: s.Names()})
	}
	return out, nil
}

// Names returns the profile names, sorted.
func (p Profiles) Names() []string {
	out := make([]string, 0, len(p))
	for n := range p {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Check verifies every profile against s: profile names are valid tool-style
// names, no profile is empty, and every entry resolves. Call it when loading
// configuration so that mistakes fail start-up, naming the profile.
func (p Profiles) Check(s *Set) error {
	var errs []error
	for _, name := range p.Names() {
		if !validName(name) {
			errs = append(errs, fmt.Errorf("tool profile %q: invalid name: want 1-64 characters from [a-zA-Z0-9_-]", name))
			continue
		}
		if len(p[name]) == 0 {
			errs = append(errs, fmt.Errorf("tool profile %q: no tools", name))
			continue
		}
		if _, err := p.Resolve(name, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// Matches reports whether t is named by one of entries, in the syntax of
// tools.allow and of agents' tool lists: a tool name, or "@category" for
// every tool of a category (CategoriesOf).
func Matches(t Tool, entries []string) bool {
	for _, e := range entries {
		if cat, ok := strings.CutPrefix(e, "@"); ok {
			if slices.Contains(CategoriesOf(t), cat) {
				return true
			}
		} else if e == t.Name() {
			return true
		}
	}
	return false
}
