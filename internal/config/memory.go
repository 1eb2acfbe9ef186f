package config

import (
	"encoding/json"
	"strings"
)

// MemoryConfig is the `memory:` section: the long-term memory store.
type MemoryConfig struct {
	// Backend is local_vector (SQLite with full-text and vector indexes, the
	// default), flat (MEMORIES.txt only) or mcp (an MCP memory server, see
	// MCP).
	Backend string `yaml:"backend"`
	// MCP is the memory server of the mcp backend.
	MCP MemoryMCPConfig `yaml:"mcp"`
	// ContextBudget is how many tokens of recalled memories are added to each
	// turn's prompt, besides MEMORIES.txt (0 turns recall into the prompt off).
	ContextBudget int `yaml:"context_budget"`
	// Episodes stores every answered user turn (the message and the reply)
	// as episode memories, with no model call; dreaming condenses old ones
	// into facts. Not with the flat backend.
	Episodes bool `yaml:"episodes"`
	// Embedding selects the embedding model.
	Embedding EmbeddingConfig `yaml:"embedding"`
}

// EmbeddingConfig selects the model that turns memories into vectors.
type EmbeddingConfig struct {
	// Model is "backend/model" naming a backend of models.backends (kind
	// openai or ollama), e.g. "local/nomic-embed-text", or
	// EmbeddingBuiltinUSELite, the sentence encoder built into the binary
	// (no network), or EmbeddingBuiltinHashing, the offline hashing
	// embedder (no network, words only). Empty means
	// EmbeddingBuiltinUSELite.
	Model string `yaml:"model"`
	// Dimensions is the vector size the model returns; 0 asks the model once
	// at start.
	Dimensions int `yaml:"dimensions"`
	// BatchSize is how many texts are sent per request.
	BatchSize int `yaml:"batch_size"`
}

// The embedding models built into the binary: memory.embedding.model
// names one as EmbeddingBuiltin + "/" + its name, unless models.backends
// defines a backend called EmbeddingBuiltin.
const (
	EmbeddingBuiltin = "builtin"
	// EmbeddingBuiltinUSELite is Universal Sentence Encoder Lite, run in
	// process (internal/embed/sentence), 512 dimensions.
	EmbeddingBuiltinUSELite    = EmbeddingBuiltin + "/use-lite"
	EmbeddingBuiltinDimensions = 512
	// EmbeddingBuiltinHashing is the offline hashing embedder
	// (internal/embed.NewOffline: stemmed words and their character
	// n-grams hashed into the vector), the default before the sentence
	// encoder; memory.embedding.dimensions sets its size (0: its default).
	EmbeddingBuiltinHashing = EmbeddingBuiltin + "/hashing"
)

// MemoryBackendMCP is memory.backend's value for an MCP memory server.
const MemoryBackendMCP = "mcp"

// MemoryMCPConfig is memory.mcp: which server of mcp.servers holds the
// memories and which of its tools search and store them. The defaults are
// OpenMemory's tools.
type MemoryMCPConfig struct {
	// Server names a server of the mcp.servers section.
	Server string `yaml:"server"`
	// Search is called with "{query}" replaced by the query; Store with
	// "{text}" replaced by the memory.
	Search MCPToolCall `yaml:"search"`
	Store  MCPToolCall `yaml:"store"`
}

// MCPToolCall is a tool of an MCP server and its arguments.
type MCPToolCall struct {
	Tool string `yaml:"tool"`
	// Arguments is a JSON object; "{query}" and "{text}" in it are replaced
	// by the value (JSON-escaped), so write them inside strings.
	Arguments string `yaml:"arguments"`
}

func defaultMemory() MemoryConfig {
	return MemoryConfig{
		MCP: MemoryMCPConfig{
			Search: MCPToolCall{Tool: "search_memory", Arguments: `{"query":"{query}"}`},
			Store:  MCPToolCall{Tool: "add_memories", Arguments: `{"text":"{text}"}`},
		},
		Backend:       "local_vector",
		ContextBudget: 4000,
		Episodes:      true,
		Embedding:     EmbeddingConfig{BatchSize: 64},
	}
}

func (c *Config) validateMemory() error {
	m := c.Memory
	switch m.Backend {
	case "local_vector", "flat":
	case MemoryBackendMCP:
		if strings.TrimSpace(m.MCP.Server) == "" {
			return c.invalid("memory.mcp.server", "the mcp backend needs the name of a server of mcp.servers")
		}
		for key, tc := range map[string]MCPToolCall{"memory.mcp.search": m.MCP.Search, "memory.mcp.store": m.MCP.Store} {
			if strings.TrimSpace(tc.Tool) == "" {
				return c.invalid(key+".tool", "must not be empty")
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.Arguments), &obj); err != nil {
				return c.invalid(key+".arguments", "must be a JSON object: %v", err)
			}
		}
	default:
		return c.invalid("memory.backend", "unknown backend %q (want local_vector, flat or mcp)", m.Backend)
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
	if !found && backend == EmbeddingBuiltin {
		switch e.Model {
		case EmbeddingBuiltinHashing:
			return nil
		case EmbeddingBuiltinUSELite:
		default:
			return c.invalid("memory.embedding.model", "the built-in models are %q and %q; %q is not one", EmbeddingBuiltinUSELite, EmbeddingBuiltinHashing, e.Model)
		}
		if e.Dimensions != 0 && e.Dimensions != EmbeddingBuiltinDimensions {
			return c.invalid("memory.embedding.dimensions", "%s has %d dimensions", e.Model, EmbeddingBuiltinDimensions)
		}
		return nil
	}
	if !found {
		return c.invalid("memory.embedding.model", "backend %q is not defined under models.backends", backend)
	}
	if b.Kind != ModelKindOpenAI && b.Kind != ModelKindOllama {
		return c.invalid("memory.embedding.model", "backend %q is of kind %s, which has no embeddings API (use an openai or ollama backend)", backend, b.Kind)
	}
	return nil
}
