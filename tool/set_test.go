package tool

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func namedTool(name string, opts ...Option) Tool {
	return New(name, "Tool "+name+".", func(context.Context, noArgs) (any, error) { return name, nil }, opts...)
}

func testSet(t *testing.T) *Set {
	t.Helper()
	s, err := NewSet(
		namedTool("search_web", WithCategories("research")),
		namedTool("fetch_url", WithCategories("research")),
		namedTool("read_file", ReadOnly(), WithCategories("execution")),
		namedTool("shell", WithCategories("execution")),
		namedTool("spawn_sub_session", WithCategories("orchestration")),
	)
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	return s
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"letters digits underscore dash", "read_file-2", true},
		{"64 characters", strings.Repeat("x", 64), true},
		{"empty", "", false},
		{"65 characters", strings.Repeat("x", 65), false},
		{"space", "read file", false},
		{"dot", "fs.read", false},
		{"non-ASCII", "lire_fichiér", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckName(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckName(%q) = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidName) {
				t.Errorf("error does not wrap ErrInvalidName: %v", err)
			}
		})
	}
}

// FuzzValidName checks the hand-written name check against the regular
// expression it replaces.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"read_file-2", "", strings.Repeat("x", 64), strings.Repeat("x", 65), "a b", "é", "A-Z_09\n"} {
		f.Add(s)
	}
	re := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validName(s), re.MatchString(s); got != want {
			t.Fatalf("validName(%q) = %v, the expression says %v", s, got, want)
		}
	})
}

func TestNewSet(t *testing.T) {
	s := testSet(t)
	if s.Len() != 5 {
		t.Fatalf("Len = %d", s.Len())
	}
	if got, want := s.Names(), []string{"search_web", "fetch_url", "read_file", "shell", "spawn_sub_session"}; !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v (insertion order)", got, want)
	}
	if tl, ok := s.Get("shell"); !ok || tl.Name() != "shell" {
		t.Errorf("Get(shell) = %v, %v", tl, ok)
	}
	if _, ok := s.Get("nope"); ok {
		t.Error("Get(nope) found a tool")
	}
	specs := s.Specs()
	if len(specs) != 5 || specs[2].Name != "read_file" || len(specs[2].Parameters) == 0 {
		t.Errorf("Specs = %+v", specs)
	}

	_, err := NewSet(namedTool("a"), namedTool("a"))
	if err == nil || !strings.Contains(err.Error(), `duplicate tool name "a"`) {
		t.Errorf("duplicate: err = %v", err)
	}
	_, err = NewSet(foreignNamed("bad name"))
	if !errors.Is(err, ErrInvalidName) {
		t.Errorf("invalid name: err = %v", err)
	}
	if _, err = NewSet(nil); err == nil {
		t.Error("nil tool accepted")
	}
}

func TestSelect(t *testing.T) {
	s := testSet(t)
	tests := []struct {
		name        string
		names       []string
		want        []string
		wantUnknown []string
	}{
		{"subset in set order", []string{"shell", "search_web"}, []string{"search_web", "shell"}, nil},
		{"repeated names", []string{"shell", "shell"}, []string{"shell"}, nil},
		{"none", nil, nil, nil},
		{"unknown reported, known kept", []string{"read_file", "delete_everything", "x", "x"}, []string{"read_file"}, []string{"delete_everything", "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Select(tc.names)
			if names := got.Names(); !slices.Equal(names, tc.want) && !(len(names) == 0 && len(tc.want) == 0) {
				t.Errorf("Select names = %v, want %v", names, tc.want)
			}
			var ute *UnknownToolsError
			if tc.wantUnknown == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.As(err, &ute) {
				t.Fatalf("error %v is not *UnknownToolsError", err)
			}
			if !slices.Equal(ute.Unknown, tc.wantUnknown) {
				t.Errorf("Unknown = %v, want %v", ute.Unknown, tc.wantUnknown)
			}
			if !strings.Contains(err.Error(), "available: search_web, fetch_url") {
				t.Errorf("error does not list available tools: %v", err)
			}
		})
	}
}

func TestProfiles(t *testing.T) {
	s := testSet(t)
	p := Profiles{
		"researcher": {"search_web", "fetch_url", "read_file"},
		"operator":   {"@execution", "fetch_url"},
		"broken":     {"search_web", "teleport", "@magic"},
	}
	tests := []struct {
		name        string
		profile     string
		want        []string
		wantUnknown []string
		wantErr     error
	}{
		{"names", "researcher", []string{"search_web", "fetch_url", "read_file"}, nil, nil},
		{"category entry", "operator", []string{"fetch_url", "read_file", "shell"}, nil, nil},
		{"unknown entries", "broken", []string{"search_web"}, []string{"@magic", "teleport"}, nil},
		{"undefined profile", "poet", nil, nil, ErrUnknownProfile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Resolve(tc.profile, s)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), "broken, operator, researcher") {
					t.Errorf("error does not list defined profiles: %v", err)
				}
				return
			}
			if !slices.Equal(got.Names(), tc.want) {
				t.Errorf("Resolve = %v, want %v", got.Names(), tc.want)
			}
			var ute *UnknownToolsError
			if tc.wantUnknown == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.As(err, &ute) || !slices.Equal(ute.Unknown, tc.wantUnknown) {
				t.Fatalf("err = %v, want unknown %v", err, tc.wantUnknown)
			}
		})
	}
}

func TestProfilesCheck(t *testing.T) {
	s := testSet(t)
	if err := (Profiles{"researcher": {"search_web"}, "ops": {"@execution"}}).Check(s); err != nil {
		t.Errorf("valid profiles rejected: %v", err)
	}
	err := Profiles{
		"bad name": {"shell"},
		"empty":    {},
		"typo":     {"serch_web"},
	}.Check(s)
	for _, want := range []string{`"bad name": invalid name`, `"empty": no tools`, `"typo": unknown tools "serch_web"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check error %v does not contain %q", err, want)
		}
	}
}

func TestWithCategory(t *testing.T) {
	s := testSet(t)
	if got := s.WithCategory("research").Names(); !slices.Equal(got, []string{"search_web", "fetch_url"}) {
		t.Errorf("WithCategory(research) = %v", got)
	}
	if got := s.WithCategory("none").Len(); got != 0 {
		t.Errorf("WithCategory(none) has %d tools", got)
	}
}

func foreignNamed(name string) Tool { return foreignNameTool(name) }

type foreignNameTool string

func (f foreignNameTool) Name() string      { return string(f) }
func (foreignNameTool) Description() string { return "" }
func (foreignNameTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object"}`)
}
func (foreignNameTool) Call(context.Context, json.RawMessage) (Result, error) { return Result{}, nil }
