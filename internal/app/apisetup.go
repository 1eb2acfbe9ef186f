package app

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/llm"
)

// The models setup form: the web page's setup screen when no model is
// configured (and later, to change it).
const (
	modelsFormID = "models"
	// modelKeyFile keeps the API key entered on the setup screen.
	modelKeyFile = "secrets/model_api_key"
	// setupBackend names the backend the setup screen writes.
	setupBackend = "setup"
	// setupTestTimeout bounds the test call.
	setupTestTimeout = 45 * time.Second
)

var setupProviders = []string{modelrouter.ProviderOpenAI, modelrouter.ProviderAnthropic, modelrouter.ProviderOllama}

// modelsForm describes the models form.
func (s apiSetup) modelsForm() api.SetupForm {
	desc := "Where Reverie's model runs. The settings are tested with a real call before they are saved " +
		"(to config.yaml, the key to " + modelKeyFile + "); Reverie then restarts to use them."
	model, provider, base := "", modelrouter.ProviderOpenAI, ""
	if s.a.Models.Configured() {
		// The saved model shows after saving (and the restart), with the
		// provider and base URL of its backend in config.yaml.
		desc = "Now using " + s.a.Models.Describe(modelrouter.RoleMain) + ". " + desc
		model = s.a.Models.ModelName(modelrouter.RoleMain)
		if b, ok := s.mainBackend(); ok {
			provider, base = cmp.Or(b.Kind, provider), b.BaseURL
		}
	}
	return api.SetupForm{
		ID:          modelsFormID,
		Title:       "Language model",
		Description: desc,
		Configured:  s.a.Models.Configured(),
		Fields: []api.SetupField{
			{Key: "provider", Label: "Provider", Kind: string(extension.FieldSelect), Options: setupProviders,
				Default: provider, Required: true,
				Help: "openai: OpenAI and every OpenAI-compatible server (OpenRouter, vLLM, llama.cpp, LM Studio); anthropic; ollama"},
			{Key: "base_url", Label: "Base URL", Kind: string(extension.FieldURL), Default: base,
				Help: "openai: the API root including /v1 (default https://api.openai.com/v1); ollama: the server (default http://127.0.0.1:11434); anthropic: leave empty"},
			{Key: "api_key", Label: "API key", Kind: string(extension.FieldSecret),
				Help: "required for OpenAI and Anthropic; local servers usually need none"},
			{Key: "model", Label: "Model", Kind: string(extension.FieldText), Required: true, Default: model,
				Help: "e.g. gpt-4.1-mini, claude-sonnet-4-5, llama3.1:8b"},
		},
	}
}

// mainBackend is config.yaml's backend of the main role's first entry
// ("backend/model"); ok is false when the model comes from elsewhere (the
// environment).
func (s apiSetup) mainBackend() (config.ModelBackend, bool) {
	entries := s.a.Config.Models.Roles[modelrouter.RoleMain]
	if len(entries) == 0 {
		return config.ModelBackend{}, false
	}
	name, _, _ := strings.Cut(entries[0], "/")
	b, ok := s.a.Config.Models.Backends[name]
	return b, ok
}

// safeValue matches what may go into config.yaml unescaped in quotes.
var safeValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[^"\\\x00-\x1f\x7f]*$`) })

// applyModels tests the model settings with a real call and saves them.
func (s apiSetup) applyModels(ctx context.Context, values map[string]string) (string, error) {
	v := func(k string) string { return strings.TrimSpace(values[k]) }
	provider, base, key, model := v("provider"), v("base_url"), v("api_key"), v("model")
	if provider == "" {
		provider = modelrouter.ProviderOpenAI
	}
	switch {
	case !slices.Contains(setupProviders, provider):
		return "", fmt.Errorf("%w: provider %q is not one of %s", api.ErrInvalid, provider, strings.Join(setupProviders, ", "))
	case model == "":
		return "", fmt.Errorf("%w: the model is required", api.ErrInvalid)
	case provider == modelrouter.ProviderAnthropic && key == "":
		return "", fmt.Errorf("%w: Anthropic needs an API key", api.ErrInvalid)
	case !safeValue().MatchString(base) || !safeValue().MatchString(model) || strings.ContainsAny(key, "\r\n"):
		return "", fmt.Errorf("%w: quotes, backslashes and control characters are not allowed", api.ErrInvalid)
	}
	if base == "" && provider == modelrouter.ProviderOpenAI {
		base = "https://api.openai.com/v1"
	}
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("%w: base URL %q is not an http(s) URL", api.ErrInvalid, base)
		}
	}
	cfg, err := s.a.readSetupConfig()
	if err != nil {
		return "", err
	}
	if _, saved := cfg.models[modelrouter.RoleMain]; saved || len(s.a.Config.Models.Roles[modelrouter.RoleMain]) > 0 {
		return "", fmt.Errorf("%w: config.yaml already names the main model; change the model there", api.ErrConflict)
	}

	// The key is a secret from now on, whether or not the test passes:
	// the test's error, and any log line, may echo it.
	s.a.Secrets.Add(key)
	b, err := modelrouter.Build(modelrouter.Spec{Name: setupBackend + "/" + model, Provider: provider, BaseURL: base,
		APIKey: key, Model: model, MaxTokens: 16}, setupTestTimeout)
	if err != nil {
		return "", fmt.Errorf("%w: %s", api.ErrTestFailed, s.a.Secrets.Redact(err.Error()))
	}
	tctx, cancel := context.WithTimeout(ctx, setupTestTimeout)
	defer cancel()
	if _, err := b.Generate(tctx, llm.Request{Messages: []llm.Message{llm.UserText("Reply with the single word OK.")}}, nil); err != nil {
		// Said in words (what happened, what to do), never the Go error
		// chain: the setup screen shows it as it is.
		words, ok := providers.Explain(err)
		if !ok {
			words = "The model did not answer (" + agent.ErrorCause(err) + ")."
		}
		return "", fmt.Errorf("%w: %s", api.ErrTestFailed, s.a.Secrets.Redact(words))
	}

	saved := setupModel{Kind: provider, BaseURL: base, Model: model}
	if key != "" {
		if err := s.a.storeKey(modelKeyFile, key); err != nil {
			return "", err
		}
		saved.KeyFile = modelKeyFile
	}
	cfg.models[modelrouter.RoleMain] = saved
	if err := cfg.write(cfg.models); err != nil {
		return "", err
	}
	s.a.Logger.Info("model configured on the setup screen; restarting", "provider", provider, "model", model)
	s.a.requestRestart("model configured on the setup screen")
	return fmt.Sprintf("Saved: the main model is %s (%s). Reverie restarts to use it: within seconds when it was started "+
		"with reverie run (or just reverie); an agent started with reverie agent must be restarted by hand.", model, provider), nil
}

// requestRestart asks the supervisor (reverie run) to restart Reverie.
func (a *App) requestRestart(why string) {
	restart := filepath.Join(a.opts.DataDir, datadir.RestartFile)
	if err := datadir.WriteFile(restart, []byte(why+"\n"+a.opts.Now().UTC().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		a.Logger.Warn("could not request a restart", "err", err)
	}
}

// configPath is the configuration file in use.
func (a *App) configPath() string {
	if a.opts.ConfigPath != "" {
		return a.opts.ConfigPath
	}
	return filepath.Join(a.opts.DataDir, "config.yaml")
}

// apiSetup lists the configuration forms of the extensions (SetupProvider)
// and applies them.
type apiSetup struct{ a *App }

func (s apiSetup) Forms(ctx context.Context) (api.SetupStatus, error) {
	out := api.SetupStatus{Configured: s.a.Models.Configured(), Forms: []api.SetupForm{s.modelsForm()}}
	if s.a.World != nil {
		out.Forms = append(out.Forms, s.namesForm())
	}
	out.Forms = append(out.Forms, s.voiceForm())
	provs := s.a.Kernel.SetupProviders()
	ids := make([]string, 0, len(provs))
	for id := range provs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		out.Forms = append(out.Forms, formOf(id, provs[id].SetupSchema(ctx)))
	}
	return out, nil
}

func formOf(id string, sc extension.SetupSchema) api.SetupForm {
	f := api.SetupForm{ID: id, Title: sc.Title, Description: sc.Description, Configured: sc.Configured,
		Fields: make([]api.SetupField, len(sc.Fields))}
	for i, fl := range sc.Fields {
		f.Fields[i] = api.SetupField{Key: fl.Key, Label: fl.Label, Kind: string(fl.Kind), Options: fl.Options,
			Default: fl.Default, Required: fl.Required, Help: fl.Help}
	}
	return f
}

func (s apiSetup) Apply(ctx context.Context, form string, values map[string]string) (string, error) {
	if form == modelsFormID {
		return s.applyModels(ctx, values)
	}
	if form == namesFormID && s.a.World != nil {
		return s.applyNames(ctx, values)
	}
	if form == voiceFormID {
		return s.applyVoice(ctx, values)
	}
	p, ok := s.a.Kernel.SetupProviders()[form]
	if !ok {
		return "", fmt.Errorf("%w: no setup form %q", api.ErrNotFound, form)
	}
	sc := p.SetupSchema(ctx)
	for _, f := range sc.Fields {
		if f.Required && strings.TrimSpace(values[f.Key]) == "" {
			return "", fmt.Errorf("%w: %s is required", api.ErrInvalid, f.Label)
		}
	}
	if err := p.ApplySetup(ctx, extension.SetupValues(values)); err != nil {
		return "", fmt.Errorf("%w: %w", api.ErrTestFailed, err)
	}
	return "Saved.", nil
}
