package config

import (
	"strings"
)

// MemoryConfig is the `memory:` section: the long-term memory store.
type MemoryConfig struct {
	// Backend is local_vector (SQLite with full-text and vector indexes, the
	// default) or flat (MEMORIES.txt only).
	Backend string `yaml:"backend"`
	// ContextBudget is how many tokens of recalled memories are added to each
	// turn's prompt, besides MEMORIES.txt (0 turns recall into the prompt off).
	ContextBudget int `yaml:"context_budget"`
	// Embedding selects the embedding model.
	Embedding EmbeddingConfig `yaml:"embedding"`
}

// EmbeddingConfig selects the model that turns memories into vectors.
type EmbeddingConfig struct {
	// Model is "backend/model" naming a backend of models.backends (kind
	// openai or ollama), e.g. "local/nomic-embed-text". Empty means the
	// built-in offline embedder (no network, deterministic).
	Model string `yaml:"model"`
	// Dimensions is the vector size the model returns; 0 asks the model once
	// at start.
	Dimensions int `yaml:"dimensions"`
	// BatchSize is how many texts are sent per request.
	BatchSize int `yaml:"batch_size"`
}

func defaultMemory() MemoryConfig {
	return MemoryConfig{
		Backend:       "local_vector",
		ContextBudget: 4000,
		Embedding:     EmbeddingConfig{BatchSize: 64},
	}
}

func (c *Config) validateMemory() error {
	m := c.Memory
	switch m.Backend {
	case "local_vector", "flat":
	default:
		return c.invalid("memory.backend", "unknown backend %q (want local_vector or flat)", m.Backend)
	}
	if m.ContextBudget < 0 {
		return c.invalid("memory.context_budget", "must not be negative")
	}
	e := m.Embedding
	if e.Dimensions < 0 || e.Dimensions > 8192 {
		return c.invalid("memory.embedding.dimensions", "must be between 0 and 8192")
	}
	if e.BatchSize < 1 || e.BatchSize > 2048 {
		return c.invalid("memory.embedding.batch_size", "must be between 1 and 2048")
	}
	if e.Model == "" {
		return nil
	}
	backend, model, ok := strings.Cut(e.Model, "/")
	if !ok || backend == "" || model == "" {
		return c.invalid("memory.embedding.model", "%q is not \"backend/model\"", e.Model)
	}
	b, found := c.Models.Backends[backend]
	if !found {
		return c.invalid("memory.embedding.model", "backend %q is not defined under models.backends", backend)
	}
	if b.Kind != ModelKindOpenAI && b.Kind != ModelKindOllama {
		return c.invalid("memory.embedding.model", "backend %q is of kind %s, which has no embeddings API (use an openai or ollama backend)", backend, b.Kind)
	}
	return nil
}
