package modelrouter

import (
	"github.com/reverie-ai/reverie/internal/providers"

	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Provider names accepted in Spec.Provider.
const (
	ProviderOpenAI    = "openai"    // any OpenAI-compatible server
	ProviderAnthropic = "anthropic" // Anthropic's messages API
	ProviderOllama    = "ollama"    // Ollama through its OpenAI-compatible /v1
)

// Spec describes a backend to build (see Build).
type Spec struct {
	Name        string
	Provider    string
	BaseURL     string
	APIKey      string
	Model       string
	ContextSize int
	MaxTokens   int
	Temperature *float64
	// Vision: the model accepts images.
	Vision bool
	// ThinkingBudget turns on Anthropic's extended thinking (0: off).
	ThinkingBudget int
	// Clock drives the provider's retry waits and timeouts (nil: the
	// real clock); tests inject one so that nothing waits.
	Clock providers.Clock
}

// Default model names when the environment names none.
const (
	DefaultOpenAIModel    = "gpt-4.1-mini"
	DefaultAnthropicModel = "claude-sonnet-4-5"
)

// EnvDefaults derives the default backend from the environment, exactly in
// the order the design gives: OPENAI_BASE_URL / OPENAI_API_KEY (model from
// REVERIE_MODEL), else ANTHROPIC_API_KEY, else an Ollama server at
// OLLAMA_HOST or 127.0.0.1:11434 that answers within a short probe (its
// first installed model unless REVERIE_MODEL names one). It returns no spec
// when none applies; the assistant then replies with NoModelMessage.
// REVERIE_MODEL_VISION=true marks the model as accepting images.
func EnvDefaults(ctx context.Context, env []string, client *http.Client) (Spec, bool) {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	model := get("REVERIE_MODEL")
	vision, _ := strconv.ParseBool(get("REVERIE_MODEL_VISION"))
	spec, ok := envSpec(ctx, get, model, client)
	spec.Vision = ok && vision
	return spec, ok
}

func envSpec(ctx context.Context, get func(string) string, model string, client *http.Client) (Spec, bool) {
	if base, key := get("OPENAI_BASE_URL"), get("OPENAI_API_KEY"); base != "" || key != "" {
		if model == "" {
			model = DefaultOpenAIModel
		}
		return Spec{Name: "default", Provider: ProviderOpenAI, BaseURL: base, APIKey: key, Model: model,
			ContextSize: 128000, MaxTokens: 4096}, true
	}
	if key := get("ANTHROPIC_API_KEY"); key != "" {
		if model == "" {
			model = DefaultAnthropicModel
		}
		return Spec{Name: "default", Provider: ProviderAnthropic, BaseURL: get("ANTHROPIC_BASE_URL"), APIKey: key,
			Model: model, ContextSize: 200000, MaxTokens: 4096}, true
	}
	host := get("OLLAMA_HOST")
	if host == "" {
		host = "127.0.0.1:11434"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	host = strings.TrimRight(host, "/")
	models, err := ollamaModels(ctx, client, host)
	if err != nil {
		return Spec{}, false
	}
	if model == "" {
		if len(models) == 0 {
			return Spec{}, false
		}
		model = models[0]
	}
	return Spec{Name: "default", Provider: ProviderOllama, BaseURL: host + "/v1", Model: model,
		ContextSize: 8192, MaxTokens: 2048}, true
}

// ollamaModels lists the models of an Ollama server (GET /api/tags) with a
// short timeout: a missing server costs almost nothing at start-up.
func ollamaModels(ctx context.Context, client *http.Client, base string) ([]string, error) {
	if client == nil {
		client = &http.Client{Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 300 * time.Millisecond}).DialContext,
			ResponseHeaderTimeout: time.Second,
		}}
	}
	ctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/tags", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ollama: %s", resp.Status)
	}
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&tags); err != nil {
		return nil, fmt.Errorf("ollama: decode /api/tags: %w", err)
	}
	out := make([]string, 0, len(tags.Models))
	for _, m := range tags.Models {
		out = append(out, m.Name)
	}
	return out, nil
}
