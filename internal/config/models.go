package config

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// ModelsConfig is the `models:` section: where the language models are and
// which role uses which. When it names no backend, the model router derives
// one from the environment (OPENAI_*, ANTHROPIC_API_KEY, a local Ollama).
type ModelsConfig struct {
	// Backends are API endpoints by name.
	Backends map[string]ModelBackend `yaml:"backends"`
	// Roles map a role (main, compaction, sub_sessions, dreaming,
	// reflection, scout, supervisor, or one an extension registers) to an
	// ordered list of "backend/model" entries; later entries are fallbacks
	// used only while earlier ones are unavailable. The speech roles stt
	// (speech to text) and tts (text to speech) name audio models of openai
	// backends and never fall back to main.
	Roles map[string][]string `yaml:"roles"`
}

// ModelBackend is one API endpoint.
type ModelBackend struct {
	// Kind is openai (any OpenAI-compatible server), anthropic or ollama.
	Kind string `yaml:"kind"`
	// BaseURL is the API root (for openai including /v1; for ollama the
	// server address).
	BaseURL string `yaml:"base_url"`
	// APIKey authenticates; usually {env: NAME}.
	APIKey Secret `yaml:"api_key"`
	// ContextSize is the context window of its models in tokens (0: the
	// kind's default).
	ContextSize int `yaml:"context_size"`
	// MaxTokens caps each reply (0: the kind's default).
	MaxTokens int `yaml:"max_tokens"`
	// Temperature applies when a request sets none (nil: the server's).
	Temperature *float64 `yaml:"temperature"`
	// Timeout bounds one call including retries (0: 10 minutes).
	Timeout time.Duration `yaml:"timeout"`
	// Vision says its models accept images (photos from channels are then
	// sent as image parts; otherwise as a note naming the saved file).
	// Default false. Put vision and text-only models on two backends with
	// the same base_url when they share a server.
	Vision bool `yaml:"vision"`
	// ThinkingBudget turns on Anthropic's extended thinking with this many
	// tokens for reasoning (0: off; at least 1024). The reasoning shows
	// folded above the reply. OpenAI-compatible servers and Ollama stream
	// the reasoning of thinking models without a setting.
	ThinkingBudget int `yaml:"thinking_budget"`
}

// Model backend kinds.
const (
	ModelKindOpenAI    = "openai"
	ModelKindAnthropic = "anthropic"
	ModelKindOllama    = "ollama"
)

var (
	backendName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`) })
	roleName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })
)

// ModelRef is one "backend/model" entry of a role.
type ModelRef struct {
	Backend string
	Model   string
}

// String is "backend/model".
func (r ModelRef) String() string { return r.Backend + "/" + r.Model }

// ParseModelRef splits "backend/model" at the first slash (model names may
// contain slashes: "openrouter/anthropic/claude-sonnet-4").
func ParseModelRef(s string) (ModelRef, error) {
	b, m, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || b == "" || m == "" {
		return ModelRef{}, fmt.Errorf("%q is not of the form backend/model", s)
	}
	return ModelRef{Backend: b, Model: m}, nil
}

func (c *Config) validateModels() error {
	m := c.Models
	names := make([]string, 0, len(m.Backends))
	for name := range m.Backends {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b := m.Backends[name]
		key := "models.backends." + name
		if !backendName().MatchString(name) || strings.Contains(name, "/") {
			return c.invalid(key, "backend name %q must be letters, digits, '_', '.' or '-'", name)
		}
		switch b.Kind {
		case ModelKindOpenAI, ModelKindAnthropic, ModelKindOllama:
		case "":
			return c.invalid(key+".kind", "missing (want openai, anthropic or ollama)")
		default:
			return c.invalid(key+".kind", "unknown kind %q (want openai, anthropic or ollama)", b.Kind)
		}
		if b.ContextSize < 0 {
			return c.invalid(key+".context_size", "must not be negative")
		}
		if b.MaxTokens < 0 {
			return c.invalid(key+".max_tokens", "must not be negative")
		}
		if b.ContextSize > 0 && b.MaxTokens >= b.ContextSize {
			return c.invalid(key+".max_tokens", "must be smaller than context_size")
		}
		if b.Timeout < 0 {
			return c.invalid(key+".timeout", "must not be negative")
		}
		if b.Temperature != nil && (*b.Temperature < 0 || *b.Temperature > 2) {
			return c.invalid(key+".temperature", "must be between 0 and 2")
		}
		switch {
		case b.ThinkingBudget < 0 || (b.ThinkingBudget > 0 && b.ThinkingBudget < 1024):
			return c.invalid(key+".thinking_budget", "must be 0 (off) or at least 1024 tokens")
		case b.ThinkingBudget > 0 && b.Kind != ModelKindAnthropic:
			return c.invalid(key+".thinking_budget", "applies to anthropic backends only (OpenAI-compatible servers and Ollama stream a thinking model's reasoning without it)")
		}
	}
	roles := make([]string, 0, len(m.Roles))
	for role := range m.Roles {
		roles = append(roles, role)
	}
	sort.Strings(roles)
	for _, role := range roles {
		key := "models.roles." + role
		if !roleName().MatchString(role) {
			return c.invalid(key, "role name %q must be lower-case letters, digits and '_'", role)
		}
		if len(m.Roles[role]) == 0 {
			return c.invalid(key, "lists no model")
		}
		for _, entry := range m.Roles[role] {
			ref, err := ParseModelRef(entry)
			if err != nil {
				return c.invalid(key, "%v", err)
			}
			if _, ok := m.Backends[ref.Backend]; !ok {
				return c.invalid(key, "%q names backend %q, which is not defined under models.backends (defined: %s)",
					entry, ref.Backend, strings.Join(names, ", "))
			}
		}
	}
	if len(m.Backends) > 0 && len(m.Roles["main"]) == 0 && !m.SpeechOnly() {
		return c.invalid("models.roles", "backends are defined but the main role lists none")
	}
	return nil
}

// SpeechOnly reports whether the section names only speech models: every
// listed role is stt or tts and every backend serves one of them. The chat
// models then come from the environment, as with no models section (the
// setup screen's voice form writes such a section when the main model is
// not configured in config.yaml).
func (m ModelsConfig) SpeechOnly() bool {
	used := map[string]bool{}
	for role, entries := range m.Roles {
		if !slices.Contains(SpeechRoles, role) {
			return false
		}
		for _, e := range entries {
			if ref, err := ParseModelRef(e); err == nil {
				used[ref.Backend] = true
			}
		}
	}
	for name := range m.Backends {
		if !used[name] {
			return false
		}
	}
	return len(m.Roles) > 0
}
