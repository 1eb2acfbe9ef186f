// Package ollama calls Ollama's native embedding API (POST /api/embed):
// several texts per request, optional output dimensions, long inputs
// truncated by the server. Chat goes through Ollama's OpenAI-compatible
// /v1 with the openai provider; embeddings use the native endpoint, which
// every Ollama version since 0.3 serves.
package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/reverie-ai/reverie/internal/providers"
)

// DefaultBaseURL is where Ollama listens by default.
const DefaultBaseURL = "http://127.0.0.1:11434"

// DefaultBatchSize is how many texts one request carries when Options
// gives none.
const DefaultBatchSize = 64

// maxResponseBytes bounds one /api/embed answer (64 texts × 4096
// dimensions as JSON numbers fit well within it).
const maxResponseBytes = 64 << 20

// Options configure an Embedder.
type Options struct {
	// Name names the backend in errors ("local/nomic-embed-text").
	Name string
	// BaseURL is the server address ("http://host:11434"; a trailing /v1 or
	// /api is ignored). Empty: DefaultBaseURL.
	BaseURL string
	// Model is the Ollama model name (required).
	Model string
	// Dimensions asks for vectors of that size (models that support it);
	// 0 leaves it to the model.
	Dimensions int
	// BatchSize is how many texts one request carries (DefaultBatchSize
	// when 0).
	BatchSize int
	// Timeouts bound each call; MaxRetries, Clock and Jitter tune retries
	// (see providers.Policy).
	Timeouts   providers.Timeouts
	MaxRetries int
	Clock      providers.Clock
	Jitter     func() float64
	// HTTPClient sends the requests (nil: providers.NewHTTPClient).
	HTTPClient *http.Client
}

// Embedder embeds texts with one Ollama model.
type Embedder struct {
	o      Options
	url    string
	policy providers.Policy
}

// NewEmbedder checks o and returns the embedder.
func NewEmbedder(o Options) (*Embedder, error) {
	if strings.TrimSpace(o.Model) == "" {
		return nil, fmt.Errorf("ollama embedder %s: no model", o.Name)
	}
	if o.Dimensions < 0 || o.BatchSize < 0 {
		return nil, fmt.Errorf("ollama embedder %s: negative dimensions or batch size", o.Name)
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Name == "" {
		o.Name = "ollama/" + o.Model
	}
	base := strings.TrimSpace(o.BaseURL)
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	base = strings.TrimRight(base, "/")
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/v1"), "/api")
	if o.HTTPClient == nil {
		o.HTTPClient = providers.NewHTTPClient(o.Timeouts)
	}
	return &Embedder{o: o, url: base + "/api/embed",
		policy: providers.Policy{Provider: o.Name, Timeouts: o.Timeouts, MaxRetries: o.MaxRetries, Clock: o.Clock, Jitter: o.Jitter}}, nil
}

// Model is the Ollama model name.
func (e *Embedder) Model() string { return e.o.Model }

// embedRequest is the body of POST /api/embed.
type embedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Truncate   bool     `json:"truncate"`
	Dimensions int      `json:"dimensions,omitempty"`
}

// embedResponse is its answer.
type embedResponse struct {
	Model      string      `json:"model"`
	Embeddings [][]float32 `json:"embeddings"`
}

// Embed returns one vector per text, in input order, sending at most
// BatchSize texts per request. Errors are *providers.Error.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for batch := range slices.Chunk(texts, e.o.BatchSize) {
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embedRequest{Model: e.o.Model, Input: texts, Truncate: true, Dimensions: e.o.Dimensions})
	if err != nil {
		return nil, fmt.Errorf("ollama embed: encode request: %w", err)
	}
	var vecs [][]float32
	err = e.policy.Run(ctx, e.o.Model, nil, func(ctx context.Context, a *providers.Attempt) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
		if err != nil {
			return providers.BadRequest(err, "build the request")
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := a.Middleware(req, e.o.HTTPClient.Do)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
		if err != nil {
			return err
		}
		if res.StatusCode >= 400 {
			return fmt.Errorf("ollama /api/embed: %s", res.Status)
		}
		if len(data) > maxResponseBytes {
			return providers.BadResponse(nil, "answer larger than %d bytes", maxResponseBytes)
		}
		var r embedResponse
		if err := json.Unmarshal(data, &r); err != nil {
			return providers.BadResponse(err, "decode /api/embed answer")
		}
		if len(r.Embeddings) != len(texts) {
			return providers.BadResponse(nil, "%d embeddings for %d texts", len(r.Embeddings), len(texts))
		}
		for i, v := range r.Embeddings {
			if len(v) == 0 || (i > 0 && len(v) != len(r.Embeddings[0])) {
				return providers.BadResponse(nil, "embedding %d has %d dimensions", i, len(v))
			}
		}
		vecs = r.Embeddings
		return nil
	})
	if err != nil {
		return nil, err
	}
	return vecs, nil
}
