package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/llm/llmtest"
)

// `reverie eval locomo --embedding BACKEND/MODEL` embeds with that model: a
// backend of the config file (OpenAI-compatible /v1/embeddings), or
// ollama/MODEL at OLLAMA_HOST (/api/embed) without a config file; a model
// that does not answer is an error that says so, not a silent run with
// another model. Without --embedding it is the built-in sentence encoder
// (the product's default), with --embedding-cache too; builtin/hashing is
// the offline hashing embedder, which keeps nothing.
func TestEvalLoCoMoEmbedding(t *testing.T) {
	data := filepath.Join("..", "..", "internal", "eval", "testdata", "synthetic.json")
	oa := llmtest.NewOpenAIServer(t)
	oa.SetEmbeddingDimensions(16)
	ol := llmtest.NewOllamaServer(t)
	ol.AddModel("nomic-embed-text", 24)

	dir := t.TempDir()
	cfg := "models:\n  backends:\n    lab:\n      kind: openai\n      base_url: " + oa.BaseURL() + "\n      api_key: {env: LAB_KEY}\n  roles:\n    main: [lab/gpt-test]\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	home := []string{"HOME=" + t.TempDir()}
	cases := []struct {
		name      string
		env       []string
		args      []string
		ok        bool
		want      string // in stderr
		requests  func() int
		cacheFile string // kept after the run, when --embedding-cache names one
	}{
		{name: "configured OpenAI-compatible backend", env: append(home, "LAB_KEY=sk-test"), args: []string{"--config", filepath.Join(dir, "config.yaml"), "--embedding", "lab/text-embedding-3-small"},
			ok: true, want: "lab/text-embedding-3-small (16 dimensions)", requests: func() int { return len(oa.EmbeddingRequests()) }},
		{name: "ollama from OLLAMA_HOST", env: append(home, "OLLAMA_HOST="+ol.URL()), args: []string{"--embedding", "ollama/nomic-embed-text"},
			ok: true, want: "ollama/nomic-embed-text (24 dimensions)", requests: func() int { return len(ol.Requests()) }},
		{name: "dimensions asked", env: append(home, "OLLAMA_HOST="+ol.URL()), args: []string{"--embedding", "ollama/nomic-embed-text", "--embedding-dimensions", "8"},
			ok: true, want: "(8 dimensions)", requests: func() int { return len(ol.Requests()) }},
		{name: "model not pulled", env: append(home, "OLLAMA_HOST="+ol.URL()), args: []string{"--embedding", "ollama/missing"},
			want: `model "missing" not found`},
		{name: "built-in sentence encoder", env: home, args: []string{"--embedding", "builtin/use-lite"},
			ok: true, want: "builtin/use-lite (512 dimensions)"},
		{name: "built-in encoder with a cache file", env: home, args: []string{"--embedding", "builtin/use-lite", "--embedding-cache", filepath.Join(dir, "vectors.db")},
			ok: true, want: "builtin/use-lite (512 dimensions)", cacheFile: filepath.Join(dir, "vectors.db")},
		{name: "unknown built-in model", env: home, args: []string{"--embedding", "builtin/bert"}, want: "the built-in models are"},
		{name: "the default: the built-in encoder", env: home, args: nil, ok: true, want: "builtin/use-lite (512 dimensions)"},
		{name: "the default with a cache file", env: home, args: []string{"--embedding-cache", filepath.Join(dir, "x.db")},
			ok: true, want: "builtin/use-lite (512 dimensions)", cacheFile: filepath.Join(dir, "x.db")},
		{name: "the offline hashing embedder", env: home, args: []string{"--embedding", "builtin/hashing"}, ok: true, want: "builtin/hashing (384 dimensions)"},
		{name: "hashing with a cache file", env: home, args: []string{"--embedding", "builtin/hashing", "--embedding-cache", filepath.Join(dir, "y.db")},
			want: "builtin/hashing keeps nothing"},
		{name: "dimensions without a model", env: home, args: []string{"--embedding-dimensions", "8"}, want: "--embedding-dimensions needs --embedding"},
		{name: "unknown backend", env: home, args: []string{"--embedding", "elsewhere/model"}, want: "not under models.backends"},
		{name: "not backend/model", env: home, args: []string{"--embedding", "model"}, want: `not "backend/model"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := 0
			if c.requests != nil {
				before = c.requests()
			}
			args := append([]string{"eval", "locomo", "--data", data, "--json", "--k", "10"}, c.args...)
			code, out, errs := runCLI(t, c.env, args...)
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr %q, want %q", errs, c.want)
			}
			if !c.ok {
				if code == ExitOK {
					t.Fatalf("succeeded: %s", out)
				}
				return
			}
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var rep struct {
				Overall   map[string]float64 `json:"overall"`
				Questions int                `json:"questions"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Questions == 0 {
				t.Fatalf("report %q: %v", out, err)
			}
			if c.cacheFile != "" {
				if st, err := os.Stat(c.cacheFile); err != nil || st.Size() == 0 {
					t.Errorf("vector cache file: %v", err)
				}
			}
			if c.requests != nil && c.requests() <= before+1 {
				t.Errorf("%d embedding requests, want the probe and the conversation's", c.requests()-before)
			}
		})
	}
}

// With --cv the weights are tried over and over on the same questions; the
// --embedding model is still asked for each text once in the run.
func TestEvalCVEmbedsEachTextOnce(t *testing.T) {
	data := filepath.Join("..", "..", "internal", "eval", "testdata", "longmemeval-synthetic.json")
	oa := llmtest.NewOpenAIServer(t)
	oa.SetEmbeddingDimensions(16)
	dir := t.TempDir()
	cfg := "models:\n  backends:\n    lab:\n      kind: openai\n      base_url: " + oa.BaseURL() + "\n      api_key: {env: LAB_KEY}\n  roles:\n    main: [lab/gpt-test]\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + t.TempDir(), "LAB_KEY=sk-test"}
	code, out, errs := runCLI(t, env, "eval", "longmemeval", "--data", data, "--json", "--cv",
		"--config", filepath.Join(dir, "config.yaml"), "--embedding", "lab/text-embedding-3-small")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `"round"`) {
		t.Fatalf("report %q", out)
	}
	seen := map[string]int{}
	texts := 0
	for _, r := range oa.EmbeddingRequests() {
		for _, text := range r.Texts() {
			seen[text]++
			texts++
		}
	}
	for text, n := range seen {
		if n > 1 && text != "dimension probe" {
			t.Errorf("%q was sent to the model %d times", text, n)
		}
	}
	if texts < 10 {
		t.Errorf("%d texts embedded: the run did not use the model", texts)
	}
}
