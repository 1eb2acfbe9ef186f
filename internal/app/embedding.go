package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/sentence"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/providers/ollama"
	"github.com/reverie-ai/reverie/internal/providers/openai"
)

// embedProbeTimeout bounds the one call that asks an embedding model for
// its vector size.
const embedProbeTimeout = 15 * time.Second

// embedCallTimeout bounds one embedding call, retries included.
const embedCallTimeout = 2 * time.Minute

// EmbeddingBackend is where an embedding model is served.
type EmbeddingBackend struct {
	// Kind is config.ModelKindOpenAI (any OpenAI-compatible server),
	// config.ModelKindOllama, or config.EmbeddingBuiltin (a model run in
	// this process; no URL or key).
	Kind    string
	BaseURL string
	APIKey  string
}

// ErrNoEmbeddingBackend: the "backend/model" reference names no usable
// backend.
var ErrNoEmbeddingBackend = errors.New("no such embedding backend")

// ResolveEmbeddingBackend finds the backend of ref ("backend/model") among
// models.backends. A name not configured there may be "ollama" (OLLAMA_HOST,
// else 127.0.0.1:11434) or "openai" (OPENAI_BASE_URL, else OpenAI's API,
// with OPENAI_API_KEY), read from env, so that `reverie eval locomo
// --embedding` works without a config file. It returns the backend and the
// model name.
func ResolveEmbeddingBackend(models config.ModelsConfig, ref string, env []string) (EmbeddingBackend, string, error) {
	name, model, ok := strings.Cut(ref, "/")
	if !ok || name == "" || model == "" {
		return EmbeddingBackend{}, "", fmt.Errorf("embedding model %q is not \"backend/model\"", ref)
	}
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	if bc, ok := models.Backends[name]; ok {
		if bc.Kind != config.ModelKindOpenAI && bc.Kind != config.ModelKindOllama {
			return EmbeddingBackend{}, "", fmt.Errorf("%w: backend %q is of kind %s, which has no embeddings API (use an openai or ollama backend)",
				ErrNoEmbeddingBackend, name, bc.Kind)
		}
		key := ""
		if bc.APIKey.IsSet() {
			k, err := bc.APIKey.Resolve()
			if err != nil {
				return EmbeddingBackend{}, "", fmt.Errorf("models.backends.%s.api_key: %w", name, err)
			}
			key = k
		}
		return EmbeddingBackend{Kind: bc.Kind, BaseURL: bc.BaseURL, APIKey: key}, model, nil
	}
	switch name {
	case config.EmbeddingBuiltin:
		return EmbeddingBackend{Kind: config.EmbeddingBuiltin}, model, nil
	case config.ModelKindOllama:
		return EmbeddingBackend{Kind: config.ModelKindOllama, BaseURL: get("OLLAMA_HOST")}, model, nil
	case config.ModelKindOpenAI:
		base := get("OPENAI_BASE_URL")
		if base == "" {
			base = "https://api.openai.com/v1"
		}
		return EmbeddingBackend{Kind: config.ModelKindOpenAI, BaseURL: base, APIKey: get("OPENAI_API_KEY")}, model, nil
	}
	return EmbeddingBackend{}, "", fmt.Errorf("%w: %q is not under models.backends (or use %s, ollama/MODEL or openai/MODEL)",
		ErrNoEmbeddingBackend, name, config.EmbeddingBuiltinUSELite)
}

// NewEmbeddingModel builds the embedding model ref ("backend/model") served
// by b: the sentence encoder built into the binary, an OpenAI-compatible
// /embeddings through the official SDK, or Ollama's native /api/embed.
// dims 0 asks the model for its vector size
// with one call (bounded by embedProbeTimeout). Every answer is checked to
// have dims dimensions and L2-normalised (embed.Wrap); the embedder's ID is
// ref@dims/dims, the tag stored with each vector.
func NewEmbeddingModel(ctx context.Context, b EmbeddingBackend, ref, model string, dims, batch int) (embed.Embedder, error) {
	var p embed.Provider
	switch b.Kind {
	case config.EmbeddingBuiltin:
		return builtinEmbedder(ref, dims)
	case config.ModelKindOllama:
		e, err := ollama.NewEmbedder(ollama.Options{Name: ref, BaseURL: b.BaseURL, Model: model, Dimensions: dims, BatchSize: batch,
			Timeouts: providers.Timeouts{Total: embedCallTimeout}})
		if err != nil {
			return nil, err
		}
		p = e
	default:
		e, err := openai.NewEmbedder(openai.Options{Name: ref, BaseURL: b.BaseURL, APIKey: b.APIKey, Model: model, Dimensions: dims, BatchSize: batch,
			Timeouts: providers.Timeouts{Total: embedCallTimeout}})
		if err != nil {
			return nil, err
		}
		p = e
	}
	if dims == 0 {
		pctx, cancel := context.WithTimeout(ctx, embedProbeTimeout)
		vecs, err := p.Embed(pctx, []string{"dimension probe"})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("ask %s for its vector size: %w", ref, err)
		}
		if len(vecs) != 1 || len(vecs[0]) == 0 {
			return nil, fmt.Errorf("ask %s for its vector size: %w: %d vectors for one text", ref, embed.ErrDimensions, len(vecs))
		}
		dims = len(vecs[0])
	}
	return embed.Wrap(p, dims, ref+"@"+strconv.Itoa(dims)), nil
}

// builtinEmbedder returns the built-in model ref:
// config.EmbeddingBuiltinUSELite at its own size (dims 0 or 512), whose ID
// (sentence.ID) names how it reads a text as well (its windows:
// builtin/use-lite/w128s96x8f67@512/512), so that the vectors of another
// reading (sentence.ClippedID, which read a text's first 128 pieces only)
// are re-embedded; or config.EmbeddingBuiltinHashing, the offline
// hashing embedder (dims 0: embed.DefaultDimensions), whose vectors keep
// the offline-… ID they had when it was the default. builtinByID finds
// either by its ID.
func builtinEmbedder(ref string, dims int) (embed.Embedder, error) {
	switch ref {
	case config.EmbeddingBuiltinHashing:
		return embed.NewOffline(dims), nil
	case config.EmbeddingBuiltinUSELite:
	default:
		return nil, fmt.Errorf("%w: the built-in models are %s and %s; %q is not one", ErrNoEmbeddingBackend,
			config.EmbeddingBuiltinUSELite, config.EmbeddingBuiltinHashing, ref)
	}
	e, err := sentence.New()
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", ref, err)
	}
	if dims != 0 && dims != e.Dimensions() {
		return nil, fmt.Errorf("%s has %d dimensions, not %d: %w", ref, e.Dimensions(), dims, embed.ErrDimensions)
	}
	return e, nil
}

// embeddingRef splits an embedder ID made by NewEmbeddingModel into the
// model reference and its dimensions.
func embeddingRef(id string) (ref string, dims int, ok bool) {
	rest, d, ok := cutLast(id, "/")
	if !ok {
		return "", 0, false
	}
	ref, d2, ok := cutLast(rest, "@")
	if !ok || d != d2 {
		return "", 0, false
	}
	n, err := strconv.Atoi(d)
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return ref, n, true
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

// builtinByID returns the built-in sentence encoder whose vectors id
// names: the windowed one (sentence.ID, not of the form ref@dims/dims
// whose ref a configuration names), or the one that read a text's first
// 128 pieces (sentence.ClippedID), which serves recall from a store of its
// vectors while it is re-embedded.
func builtinByID(id string) (embed.Embedder, bool) {
	var e *sentence.Encoder
	var err error
	switch id {
	case sentence.ID:
		e, err = sentence.New()
	case sentence.ClippedID:
		e, err = sentence.NewClipped()
	default:
		return nil, false
	}
	return e, err == nil
}

// offlineByID returns the offline embedder with that ID, if it is one.
func offlineByID(id string) (embed.Embedder, bool) {
	_, d, ok := cutLast(id, "/")
	if !ok || !strings.HasPrefix(id, "offline-") {
		return nil, false
	}
	n, err := strconv.Atoi(d)
	if err != nil || n <= 0 {
		return nil, false
	}
	e := embed.NewOffline(n)
	return e, e.ID() == id
}

// embedders builds and caches the embedding models of the memory store.
type embedders struct {
	a   *App
	log *slog.Logger
}

// configured returns the configured embedding model (none configured: the
// built-in sentence encoder, config.EmbeddingBuiltinUSELite), or why it
// cannot be used. dims come from the configuration, else from the vectors
// the store already holds of that model (no call), else from one call to
// the model.
func (e embedders) configured(ctx context.Context, ec config.EmbeddingConfig, stored []string) (embed.Embedder, error) {
	if ec.Model == "" {
		ec.Model = config.EmbeddingBuiltinUSELite
	}
	b, model, err := ResolveEmbeddingBackend(e.a.Config.Models, ec.Model, e.a.opts.Env)
	if err != nil {
		return nil, err
	}
	dims := ec.Dimensions
	if dims == 0 {
		for _, id := range stored {
			if ref, d, ok := embeddingRef(id); ok && ref == ec.Model {
				dims = d
				break
			}
		}
	}
	m, err := NewEmbeddingModel(ctx, b, ec.Model, model, dims, ec.BatchSize)
	if err != nil {
		return nil, err
	}
	return e.cached(ctx, b, m)
}

// cached wraps m, served by b, in the embedding cache of the database. A
// built-in model is computed in this process in milliseconds: nothing is
// kept.
func (e embedders) cached(ctx context.Context, b EmbeddingBackend, m embed.Embedder) (embed.Embedder, error) {
	if b.Kind == config.EmbeddingBuiltin {
		return m, nil
	}
	c, err := embed.NewCached(ctx, m, e.a.DB, e.a.migrations)
	if err != nil {
		return nil, fmt.Errorf("open embedding cache: %w", err)
	}
	return c, nil
}

// previous builds the model of stored vectors by their ID (memory.Previous):
// the offline hashing embedder, a built-in model, or a model of a backend
// still configured.
func (e embedders) previous(ctx context.Context) memory.Previous {
	return func(id string) (embed.Embedder, bool) {
		if off, ok := offlineByID(id); ok {
			return off, true
		}
		if enc, ok := builtinByID(id); ok {
			return enc, true
		}
		ref, dims, ok := embeddingRef(id)
		if !ok {
			return nil, false
		}
		b, model, err := ResolveEmbeddingBackend(e.a.Config.Models, ref, e.a.opts.Env)
		if err != nil {
			return nil, false
		}
		m, err := NewEmbeddingModel(ctx, b, ref, model, dims, 0)
		if err != nil {
			return nil, false
		}
		c, err := e.cached(ctx, b, m)
		if err != nil || c.ID() != id {
			return nil, false
		}
		return c, true
	}
}

// forStore chooses the store's embedding model: the configured one, or —
// when it cannot be used (its server does not answer the size probe, its
// backend is gone, the built-in encoder does not load) — with a warning,
// the model of the stored vectors when it can be built, else the offline
// hashing embedder. In the fallback nothing is
// re-embedded (the vectors stay those of the model in use) until a start
// finds the configured model answering.
// fallback is true when the configured model is not the one returned.
func (e embedders) forStore(ctx context.Context, ec config.EmbeddingConfig) (m embed.Embedder, fallback bool, err error) {
	stored, err := memory.StoredModels(ctx, e.a.migrations, e.a.DB)
	if err != nil {
		return nil, false, err
	}
	m, err = e.configured(ctx, ec, stored)
	if err == nil {
		return m, false, nil
	}
	if len(stored) > 0 {
		if p, ok := e.previous(ctx)(stored[0]); ok {
			e.log.Warn("the embedding model cannot be used; the model of the stored vectors is used until it can (next start)",
				"model", ec.Model, "using", p.ID(), "err", err)
			return p, true, nil
		}
	}
	e.log.Warn("the embedding model cannot be used; the offline hashing embedder is used until it can (next start), and nothing is re-embedded meanwhile",
		"model", ec.Model, "err", err)
	return embed.NewOffline(embed.DefaultDimensions), true, nil
}
