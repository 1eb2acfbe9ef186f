package config

import (
	"strings"
	"testing"
)

func TestModelsSection(t *testing.T) {
	const good = `models:
  backends:
    openrouter:
      kind: openai
      base_url: https://openrouter.ai/api/v1
      api_key: {env: OPENROUTER_API_KEY}
      context_size: 200000
      max_tokens: 8192
    local:
      kind: ollama
      base_url: http://127.0.0.1:11434
  roles:
    main: [openrouter/anthropic/claude-sonnet-4, local/qwen3:8b]
    scout: [local/qwen3:8b]
`
	tests := []struct {
		name    string
		yaml    string
		wantErr string // substring; "" means valid
	}{
		{"valid", good, ""},
		{"no models at all", "models:\n  backends: {}\n", ""},
		{"unknown kind", strings.Replace(good, "kind: ollama", "kind: llamafile", 1), `unknown kind "llamafile"`},
		{"missing kind", strings.Replace(good, "      kind: ollama\n", "", 1), "models.backends.local.kind: missing"},
		{"role names undefined backend", strings.Replace(good, "scout: [local/qwen3:8b]", "scout: [lokal/qwen3:8b]", 1), `names backend "lokal"`},
		{"role entry without model", strings.Replace(good, "scout: [local/qwen3:8b]", "scout: [local]", 1), "not of the form backend/model"},
		{"no main role", strings.Replace(good, "main: [openrouter/anthropic/claude-sonnet-4, local/qwen3:8b]", "dreaming: [local/x]", 1), "main role lists none"},
		{"speech models only", "models:\n  backends:\n    whisper: {kind: openai, base_url: \"http://127.0.0.1:9/v1\"}\n  roles:\n    stt: [whisper/base]\n", ""},
		{"a backend beside speech models and no main", "models:\n  backends:\n    whisper: {kind: openai}\n    other: {kind: openai}\n  roles:\n    stt: [whisper/base]\n", "main role lists none"},
		{"max tokens over context", strings.Replace(good, "max_tokens: 8192", "max_tokens: 300000", 1), "smaller than context_size"},
		{"unknown backend key", strings.Replace(good, "context_size: 200000", "context: 200000", 1), `unknown key "models.backends.openrouter.context"`},
		{"thinking budget for anthropic", strings.Replace(good, "kind: ollama", "kind: anthropic\n      thinking_budget: 4096", 1), ""},
		{"thinking budget on openai", strings.Replace(good, "max_tokens: 8192", "max_tokens: 8192\n      thinking_budget: 2048", 1), "applies to anthropic backends only"},
		{"thinking budget too small", strings.Replace(good, "kind: ollama", "kind: anthropic\n      thinking_budget: 100", 1), "at least 1024"},
		{"empty role", strings.Replace(good, "scout: [local/qwen3:8b]", "scout: []", 1), "lists no model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tc.yaml), nil, nil)
			if err == nil {
				err = c.Validate()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	c, err := Load(writeConfig(t, good), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseModelRef(c.Models.Roles["main"][0])
	if err != nil || ref.Backend != "openrouter" || ref.Model != "anthropic/claude-sonnet-4" {
		t.Fatalf("ParseModelRef = %+v, %v", ref, err)
	}
	if c.Models.Backends["openrouter"].APIKey.Source() == "" {
		t.Fatal("api_key secret source lost")
	}
}
