package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWorkflowSection(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		env     []string
		key     string
		message string
	}{
		{name: "defaults"},
		{name: "zero workers", yaml: "workflow:\n  max_concurrent: 0\n", key: "workflow.max_concurrent", message: "at least 1"},
		{name: "tiny timeout", yaml: "workflow:\n  default_timeout: 10ms\n", key: "workflow.default_timeout", message: "at least 1s"},
		{name: "negative continuations", yaml: "workflow:\n  max_continuations: -1\n", key: "workflow.max_continuations", message: "negative"},
		{name: "depth", yaml: "workflow:\n  max_depth: 9\n", key: "workflow.max_depth", message: "between 1 and 4"},
		{name: "empty profile", yaml: "workflow:\n  profiles:\n    idle: []\n", key: "workflow.profiles.idle", message: "no tools"},
		{name: "bad profile name", yaml: "workflow:\n  profiles:\n    \"a b\": [x]\n", key: "workflow.profiles.a b", message: "invalid profile name"},
		{name: "env", env: []string{"REVERIE_WORKFLOW__MAX_DEPTH=0"}, key: "workflow.max_depth", message: "REVERIE_WORKFLOW__MAX_DEPTH"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tc.yaml), tc.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			if tc.message == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var cerr *Error
			if !errors.As(err, &cerr) || cerr.Key != tc.key || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("Validate() = %v (key %q), want key %q and %q", err, cerr.Key, tc.key, tc.message)
			}
		})
	}

	// Profiles from the file are added to the defaults; a default can be
	// replaced.
	c, err := Load(writeConfig(t, "workflow:\n  max_concurrent: 2\n  default_timeout: 10m\n  profiles:\n    writer: [write_file, \"@research\"]\n    coder: [execute_shell]\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := c.Workflow
	if w.MaxConcurrent != 2 || w.DefaultTimeout != 10*time.Minute || w.MaxContinuations != 3 || w.MaxDepth != 2 {
		t.Errorf("values: %+v", w)
	}
	if !slices.Equal(w.Profiles["writer"], []string{"write_file", "@research"}) || !slices.Equal(w.Profiles["coder"], []string{"execute_shell"}) ||
		len(w.Profiles["researcher"]) != 3 {
		t.Errorf("profiles: %v", w.Profiles)
	}
}
