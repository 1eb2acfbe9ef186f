package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		tmpl string
		vars map[string]string
		want string
	}{
		{"substitution", "Summarise:\n{history}\nBe brief.", map[string]string{"history": "H"}, "Summarise:\nH\nBe brief."},
		{"every occurrence", "{content} and again {content}", map[string]string{"content": "C"}, "C and again C"},
		{"append when absent", "Consolidate these memories.\n", map[string]string{"content": "- a\n- b"}, "Consolidate these memories.\n\n- a\n- b"},
		{"append several in name order", "Go.", map[string]string{"b": "B", "a": "A"}, "Go.\n\nA\n\nB"},
		{"empty value substituted", "x{content}y", map[string]string{"content": ""}, "xy"},
		{"empty value not appended", "x", map[string]string{"content": ""}, "x"},
		{"empty template gets value alone", "  \n", map[string]string{"content": "C"}, "C"},
		{"no vars", "Hello {name}", nil, "Hello {name}"},
		{"unknown placeholder left alone", "{content} {other}", map[string]string{"content": "C"}, "C {other}"},
		{"single pass: values not rescanned", "{a}", map[string]string{"a": "{b}", "b": "B"}, "{b}\n\nB"},
		{
			"json braces are literal",
			`Reply as {"decision": "keep_first"} for {content}. {Name} { content } {}`,
			map[string]string{"content": "C"},
			`Reply as {"decision": "keep_first"} for C. {Name} { content } {}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Render(tc.tmpl, tc.vars); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateTemplate(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		allowed    []string
		wantErr    error
		wantTokens []string
	}{
		{"ok with placeholder", "Summarise {history}", []string{"history"}, nil, nil},
		{"ok without optional placeholder", "Summarise the conversation.", []string{"history"}, nil, nil},
		{"json not mistaken", `Return {"decision": "merge", "text": "…"} for {content}`, []string{"content"}, nil, nil},
		{"unknown", "Merge {content} with {memories}", []string{"content"}, ErrUnknownPlaceholder, []string{"{memories}"}},
		{"unknown when none allowed", "Hello {user_name}", nil, ErrUnknownPlaceholder, []string{"{user_name}"}},
		{"missing required", "Summarise the conversation.", []string{Required("history")}, ErrMissingPlaceholder, []string{"{history}"}},
		{"required present", "Summarise {history}.", []string{Required("history")}, nil, nil},
		{"both problems", "{contnet}", []string{Required("content")}, ErrUnknownPlaceholder, []string{"{contnet}", "{content}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTemplate("prompts/X.txt", tc.text, tc.allowed)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			msg := err.Error()
			if !strings.Contains(msg, "prompts/X.txt") {
				t.Errorf("error %q does not name the file", msg)
			}
			for _, tok := range tc.wantTokens {
				if !strings.Contains(msg, tok) {
					t.Errorf("error %q does not name token %s", msg, tok)
				}
			}
		})
	}
}

func TestTemplateErrorLine(t *testing.T) {
	err := ValidateTemplate("DREAM.txt", "line one\nline two {bogus}\n", []string{"content"})
	var te *TemplateError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want *TemplateError", err)
	}
	if te.Line != 2 || te.Token != "{bogus}" || te.File != "DREAM.txt" {
		t.Errorf("got %+v", te)
	}
	if want := "DREAM.txt:2: unknown placeholder {bogus} (allowed: {content})"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

func TestValidateDir(t *testing.T) {
	write := func(t *testing.T, dir, name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := map[string][]string{
		"prompts/COMPACTION_PROMPT.txt":     {"history"},
		"prompts/DREAM_MEMORIES_PROMPT.txt": {"content"},
		"prompts/SEED_*.txt":                nil,
		"prompts/ABSENT.txt":                {Required("content")},
	}
	t.Run("valid", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, BaseFile, "Base\n<!-- if tool:x -->\nX\n<!-- end -->\n")
		write(t, dir, "prompts/COMPACTION_PROMPT.txt", "Summarise:\n{history}")
		write(t, dir, "prompts/DREAM_MEMORIES_PROMPT.txt", `Answer {"keep": true}. {content}`)
		write(t, dir, "prompts/SEED_en.txt", "Introduce yourself.")
		write(t, dir, "prompts/SEED_de.txt", "Stell dich vor.")
		if err := ValidateDir(dir, spec); err != nil {
			t.Fatalf("ValidateDir: %v", err)
		}
	})
	t.Run("every problem reported", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, BaseFile, "Base\n<!-- if tool:x -->\nX\n")
		write(t, dir, "prompts/COMPACTION_PROMPT.txt", "Summarise {conversation}")
		write(t, dir, "prompts/DREAM_MEMORIES_PROMPT.txt", "{content}")
		write(t, dir, "prompts/SEED_fr.txt", "Bonjour {name}")
		err := ValidateDir(dir, spec)
		if err == nil {
			t.Fatal("ValidateDir accepted bad templates")
		}
		msg := err.Error()
		for _, want := range []string{
			"BASE_PROMPT.txt: line 2: if without",
			"prompts/COMPACTION_PROMPT.txt:1: unknown placeholder {conversation}",
			"prompts/SEED_fr.txt:1: unknown placeholder {name}",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("error does not contain %q:\n%s", want, msg)
			}
		}
		if !errors.Is(err, ErrMarker) || !errors.Is(err, ErrUnknownPlaceholder) {
			t.Errorf("joined error should wrap ErrMarker and ErrUnknownPlaceholder: %v", err)
		}
		if strings.Contains(msg, "DREAM_MEMORIES") || strings.Contains(msg, "ABSENT") {
			t.Errorf("valid or absent files reported:\n%s", msg)
		}
	})
	t.Run("bad pattern", func(t *testing.T) {
		if err := ValidateDir(t.TempDir(), map[string][]string{"prompts/[": nil}); err == nil {
			t.Error("bad pattern accepted")
		}
	})
}

// Required marks a placeholder name as required in the allowed lists of
// ValidateTemplate and ValidateDir: Required("history") is "history!". A
// template must contain each required placeholder; optional ones may be
// absent (their value is then appended).
func Required(name string) string { return name + "!" }
