package config

import (
	"sort"
	"time"

	"github.com/reverie-ai/reverie/tool"
)

// WorkflowConfig is the `workflow:` section: background workers
// (sub-sessions) and their dependency graphs.
type WorkflowConfig struct {
	// MaxConcurrent bounds workers running at once; more wait in order.
	MaxConcurrent int `yaml:"max_concurrent"`
	// DefaultTimeout bounds one worker run when the spawn gives none.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
	// MaxContinuations is how many continuation workers may pick up a task
	// after timeouts (and how many restarts a running worker is resumed
	// after) before it fails. 0 disables continuations.
	MaxContinuations int `yaml:"max_continuations"`
	// MaxDepth is the deepest nesting: 1 = only the assistant spawns, 2 =
	// full-mode workers may spawn once more.
	MaxDepth int `yaml:"max_depth"`
	// Profiles are named tool sets a spawn can ask for instead of listing
	// tools ("@category" selects every tool of a category).
	Profiles map[string][]string `yaml:"profiles"`
}

func defaultWorkflow() WorkflowConfig {
	return WorkflowConfig{
		MaxConcurrent:    4,
		DefaultTimeout:   300 * time.Second,
		MaxContinuations: 3,
		MaxDepth:         2,
		Profiles: map[string][]string{
			"researcher": {"search_web", "fetch_url", "read_file"},
			"coder":      {"read_file", "write_file", "apply_patch", "execute_shell"},
		},
	}
}

func (c *Config) validateWorkflow() error {
	w := c.Workflow
	switch {
	case w.MaxConcurrent < 1:
		return c.invalid("workflow.max_concurrent", "must be at least 1")
	case w.DefaultTimeout < time.Second:
		return c.invalid("workflow.default_timeout", "must be at least 1s")
	case w.MaxContinuations < 0:
		return c.invalid("workflow.max_continuations", "must not be negative (0 disables continuations)")
	case w.MaxDepth < 1 || w.MaxDepth > 4:
		return c.invalid("workflow.max_depth", "must be between 1 and 4")
	}
	names := make([]string, 0, len(w.Profiles))
	for name := range w.Profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		key := "workflow.profiles." + name
		if tool.CheckName(name) != nil {
			return c.invalid(key, "invalid profile name: want 1-64 characters from [a-zA-Z0-9_-]")
		}
		if len(w.Profiles[name]) == 0 {
			return c.invalid(key, "lists no tools")
		}
	}
	return nil
}
