package modelrouter

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// TestFromConfigThroughRealProviders routes roles to a fake OpenAI-compatible
// server and a fake Anthropic server through the real SDK-backed providers.
func TestFromConfigThroughRealProviders(t *testing.T) {
	t.Setenv("OAI_KEY", "sk-test")
	oai := llmtest.NewOpenAIServer(t)
	ant := llmtest.NewAnthropicServer(t)
	oai.Enqueue(llmtest.ServerReply{Text: "from openai"})
	ant.Enqueue(llmtest.ServerReply{Text: "from anthropic"})

	models := config.ModelsConfig{
		Backends: map[string]config.ModelBackend{
			"oai": {Kind: "openai", BaseURL: oai.BaseURL(), APIKey: config.EnvSecret("OAI_KEY"), ContextSize: 1000, MaxTokens: 100},
			"ant": {Kind: "anthropic", BaseURL: ant.URL(), APIKey: config.LiteralSecret("ak")},
		},
		Roles: map[string][]string{
			"main":  {"oai/gpt-test"},
			"scout": {"ant/claude-test"},
		},
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, desc, err := FromConfig(context.Background(), Setup{Models: models, DB: db})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(desc, "oai/gpt-test") {
		t.Fatalf("desc = %q", desc)
	}
	if lim := r.Limits(RoleMain); lim.ContextSize != 1000 || lim.MaxTokens != 100 {
		t.Fatalf("main limits = %+v", lim)
	}
	if lim := r.Limits(RoleScout); lim != kindDefaults[ProviderAnthropic] {
		t.Fatalf("scout limits = %+v", lim)
	}
	for role, want := range map[string]string{RoleMain: "from openai", RoleScout: "from anthropic"} {
		resp, err := r.Model(role).Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, nil)
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if resp.Message.Text() != want {
			t.Fatalf("%s: %q, want %q", role, resp.Message.Text(), want)
		}
	}
	reqs := oai.Requests()
	if len(reqs) == 0 || reqs[len(reqs)-1].Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("openai request auth = %+v", reqs)
	}
}

func TestFromConfigNoModel(t *testing.T) {
	r, desc, err := FromConfig(context.Background(), Setup{Env: []string{"OLLAMA_HOST=127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Configured() || desc != "no model configured" {
		t.Fatalf("Configured=%v desc=%q", r.Configured(), desc)
	}
}

func TestOllamaV1(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "http://127.0.0.1:11434/v1",
		"127.0.0.1:11434":     "http://127.0.0.1:11434/v1",
		"http://gpu:11434/":   "http://gpu:11434/v1",
		"http://gpu:11434/v1": "http://gpu:11434/v1",
	} {
		if got := OllamaV1(in); got != want {
			t.Errorf("OllamaV1(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestErrorsEchoingTheKeyAreRedacted: a provider that echoes the API key in
// its error body (through the real SDK) gives an error without the key that
// still classifies as an authentication failure.
func TestErrorsEchoingTheKeyAreRedacted(t *testing.T) {
	const key = "sk-echo-0123456789abcdef"
	for _, tc := range []struct {
		name  string
		setup func(url string) Setup
	}{
		{"key from the environment", func(url string) Setup {
			return Setup{Env: []string{"OPENAI_BASE_URL=" + url, "OPENAI_API_KEY=" + key, "REVERIE_MODEL=gpt-test"}}
		}},
		{"key from the configuration", func(url string) Setup {
			return Setup{Models: config.ModelsConfig{
				Backends: map[string]config.ModelBackend{"oai": {Kind: "openai", BaseURL: url, APIKey: config.LiteralSecret(key)}},
				Roles:    map[string][]string{"main": {"oai/gpt-test"}},
			}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oai := llmtest.NewOpenAIServer(t)
			oai.Enqueue(llmtest.ServerReply{Status: 401, ErrorType: "invalid_request_error",
				ErrorMessage: "Incorrect API key provided: Authorization: Bearer " + key})
			s := tc.setup(oai.BaseURL())
			s.Secrets = &redact.Secrets{}
			r, _, err := FromConfig(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if s.Secrets.Len() != 1 {
				t.Fatalf("%d secrets registered, want the key", s.Secrets.Len())
			}
			_, err = r.Model(RoleMain).Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, nil)
			if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), redact.Marker) {
				t.Fatalf("error = %v", err)
			}
			if !errors.Is(err, providers.ErrAuth) {
				t.Errorf("the redacted error lost its class: %v", err)
			}
		})
	}
}

// A backend without api_key (a local server) needs no key: Ollama, the
// setup screen's keyless servers.
func TestFromConfigKeylessBackend(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	models := config.ModelsConfig{Backends: map[string]config.ModelBackend{"local": {Kind: "ollama", BaseURL: "http://127.0.0.1:1"}},
		Roles: map[string][]string{"main": {"local/llama3"}}}
	if _, _, err := FromConfig(context.Background(), Setup{Models: models, DB: db}); err != nil {
		t.Fatal(err)
	}
}
