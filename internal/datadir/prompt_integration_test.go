package datadir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/prompt"
)

// TestShippedFilesPassPromptValidation runs the start-up validation of the
// prompt package over a freshly bootstrapped data dir.
func TestShippedFilesPassPromptValidation(t *testing.T) {
	dir := t.TempDir()
	if _, err := datadir.Bootstrap(dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := prompt.ValidateDir(dir, datadir.Placeholders()); err != nil {
		t.Fatal(err)
	}
}

// TestBasePromptConditionals renders BASE_PROMPT.txt for a session with all
// tools and one with none: markers vanish, and tool-specific instructions
// appear only when the tool is there.
func TestBasePromptConditionals(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(writeDefaults(t), datadir.BasePromptFile))
	if err != nil {
		t.Fatal(err)
	}
	all := []string{
		"append_memory", "update_memories", "pulse", "add_skill", "spawn_sub_session", "set_reminder",
		"list_reminders", "search_web", "fetch_url", "read_file", "write_file", "execute_shell", "browser_open",
	}
	tests := []struct {
		name    string
		tools   []string
		present []string
		absent  []string
	}{
		{
			name:    "all tools",
			tools:   all,
			present: []string{"You are Reverie", "## Memory", "## Pulse", "## Background workers", "depends_on", "## Reminders", "## Research", "## Files", "browser_click"},
		},
		{
			name:    "minimal worker",
			tools:   []string{"search_web", "fetch_url"},
			present: []string{"You are Reverie", "## Honesty about actions", "## Research"},
			absent:  []string{"## Memory", "spawn_sub_session", "set_reminder", "## Files", "add_skill", "browser_open"},
		},
		{
			name:    "no tools",
			present: []string{"You are Reverie", "## System events"},
			absent:  []string{"## Research", "## Background workers"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := prompt.ApplyConditionals(string(data), tc.tools)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "<!--") {
				t.Error("markers left in the rendered prompt")
			}
			if strings.Contains(out, "\n\n\n") {
				t.Error("removed blocks left runs of blank lines")
			}
			for _, s := range tc.present {
				if !strings.Contains(out, s) {
					t.Errorf("rendered prompt lacks %q", s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(out, s) {
					t.Errorf("rendered prompt has %q", s)
				}
			}
		})
	}
}

func writeDefaults(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := datadir.Bootstrap(dir, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}
