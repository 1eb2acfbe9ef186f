package modelrouter

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/providers/anthropic"
	"github.com/reverie-ai/reverie/internal/providers/openai"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// kindDefaults are the limits assumed for a backend kind when the
// configuration gives none.
var kindDefaults = map[string]Limits{
	ProviderOpenAI:    {ContextSize: 128000, MaxTokens: 4096},
	ProviderAnthropic: {ContextSize: 200000, MaxTokens: 4096},
	ProviderOllama:    {ContextSize: 8192, MaxTokens: 2048},
}

// Build creates the backend a Spec describes.
func Build(spec Spec, timeout time.Duration) (Backend, error) {
	t := providers.Timeouts{Total: timeout}
	switch spec.Provider {
	case ProviderOpenAI, ProviderOllama:
		base := spec.BaseURL
		if spec.Provider == ProviderOllama {
			base = OllamaV1(base)
		}
		c, err := openai.New(openai.Options{Name: spec.Name, BaseURL: base, APIKey: spec.APIKey, Model: spec.Model,
			MaxTokens: spec.MaxTokens, Temperature: spec.Temperature, Timeouts: t, Clock: spec.Clock})
		if err != nil {
			return nil, fmt.Errorf("model backend %s: %w", spec.Name, err)
		}
		return c, nil
	case ProviderAnthropic:
		c, err := anthropic.New(anthropic.Options{Name: spec.Name, BaseURL: spec.BaseURL, APIKey: spec.APIKey,
			Model: spec.Model, MaxTokens: spec.MaxTokens, Temperature: spec.Temperature, ThinkingBudget: spec.ThinkingBudget, Timeouts: t,
			Clock: spec.Clock})
		if err != nil {
			return nil, fmt.Errorf("model backend %s: %w", spec.Name, err)
		}
		return c, nil
	default:
		return nil, fmt.Errorf("model backend %s: unknown provider %q", spec.Name, spec.Provider)
	}
}

// ollamaV1 turns an Ollama server address into its OpenAI-compatible root.
// OllamaV1 turns an Ollama server address (empty: the local default) into
// its OpenAI-compatible API root.
func OllamaV1(base string) string {
	if base == "" {
		base = "http://127.0.0.1:11434"
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return base
}

// Setup is what FromConfig needs.
type Setup struct {
	Models config.ModelsConfig
	Env    []string
	DB     *sql.DB
	// Commits is Options.Commits.
	Commits *sqlite.Committer
	Logger  *slog.Logger
	Now     func() time.Time
	// Clock drives the providers' retry waits and timeouts (nil: the real
	// clock).
	Clock providers.Clock
	// Probe is the HTTP client for the Ollama probe (nil: a short-timeout
	// default).
	Probe *http.Client
	// Secrets receives every API key FromConfig resolves (from the
	// configuration or the environment) and redacts the Router's errors
	// (Options.Secrets). nil: keys are not registered.
	Secrets *redact.Secrets
	// Migrations is Options.Migrations.
	Migrations *sqlite.Migrations
}

// FromConfig builds the Router from the models section, or, when it
// defines no backend or only speech models (config.ModelsConfig.SpeechOnly),
// from the environment (EnvDefaults). It returns a
// one-line description of where the models came from, for the start-up log.
// With neither, the Router has no backend and every call returns ErrNoModel.
func FromConfig(ctx context.Context, s Setup) (*Router, string, error) {
	opts := Options{DB: s.DB, Commits: s.Commits, Logger: s.Logger, Now: s.Now, Roles: map[string][]string{}, Limits: map[string]Limits{},
		Secrets: s.Secrets, Migrations: s.Migrations}
	var desc string
	if len(s.Models.Backends) > 0 && !s.Models.SpeechOnly() {
		built := map[string]bool{}
		roles := make([]string, 0, len(s.Models.Roles))
		for role := range s.Models.Roles {
			if !slices.Contains(config.SpeechRoles, role) { // audio models: internal/voice
				roles = append(roles, role)
			}
		}
		sort.Strings(roles)
		for _, role := range roles {
			for _, entry := range s.Models.Roles[role] {
				ref, err := config.ParseModelRef(entry)
				if err != nil {
					return nil, "", fmt.Errorf("models.roles.%s: %w", role, err)
				}
				name := ref.String()
				opts.Roles[role] = append(opts.Roles[role], name)
				if built[name] {
					continue
				}
				bc, ok := s.Models.Backends[ref.Backend]
				if !ok {
					return nil, "", fmt.Errorf("models.roles.%s: unknown backend %q", role, ref.Backend)
				}
				var key string // none: a local server
				if bc.APIKey.IsSet() {
					if key, err = bc.APIKey.Resolve(); err != nil {
						return nil, "", fmt.Errorf("models.backends.%s.api_key: %w", ref.Backend, err)
					}
				}
				s.Secrets.Add(key)
				lim := kindDefaults[bc.Kind]
				if bc.ContextSize > 0 {
					lim.ContextSize = bc.ContextSize
				}
				if bc.MaxTokens > 0 {
					lim.MaxTokens = bc.MaxTokens
				}
				lim.Vision = bc.Vision
				b, err := Build(Spec{Name: name, Provider: bc.Kind, BaseURL: bc.BaseURL, APIKey: key, Model: ref.Model,
					ContextSize: lim.ContextSize, MaxTokens: lim.MaxTokens, Temperature: bc.Temperature, ThinkingBudget: bc.ThinkingBudget,
					Clock: s.Clock}, bc.Timeout)
				if err != nil {
					return nil, "", err
				}
				opts.Backends = append(opts.Backends, b)
				opts.Limits[name] = lim
				built[name] = true
			}
		}
		desc = fmt.Sprintf("models from config.yaml: main → %s", strings.Join(opts.Roles[RoleMain], ", "))
	} else if spec, ok := EnvDefaults(ctx, s.Env, s.Probe); ok {
		s.Secrets.Add(spec.APIKey)
		spec.Name = spec.Provider + "/" + spec.Model
		spec.Clock = s.Clock
		b, err := Build(spec, 0)
		if err != nil {
			return nil, "", err
		}
		opts.Backends = []Backend{b}
		opts.Limits[spec.Name] = Limits{ContextSize: spec.ContextSize, MaxTokens: spec.MaxTokens, Vision: spec.Vision}
		opts.Roles[RoleMain] = []string{spec.Name}
		desc = "model from the environment: " + spec.Name
	} else {
		desc = "no model configured"
	}
	r, err := New(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	return r, desc, nil
}
