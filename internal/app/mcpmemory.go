package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/memory"
)

// mcpExtension is the id of the extension that reaches MCP servers.
const mcpExtension = "mcp"

// memoryCaller is what the mcp extension offers the mcp memory backend:
// a tool call on one of its servers whose result is read as memories.
type memoryCaller interface {
	CallForMemories(ctx context.Context, server, tool string, args json.RawMessage) ([]string, error)
}

// mcpMemory is the memory.Remote of memory.backend: mcp — the search and
// store tools of memory.mcp.server, reached through the mcp extension when
// it is called (the extension starts after the memory store is built).
type mcpMemory struct {
	a   *App
	cfg config.MemoryMCPConfig
}

var _ memory.Remote = mcpMemory{}

func (m mcpMemory) caller() (memoryCaller, error) {
	ext, ok := m.a.Kernel.Extension(mcpExtension)
	if !ok {
		return nil, errors.New("memory.backend is mcp but the mcp extension is not running in this process")
	}
	c, ok := ext.(memoryCaller)
	if !ok {
		return nil, errors.New("the mcp extension cannot serve as the memory backend")
	}
	return c, nil
}

// Search calls the search tool with the query.
func (m mcpMemory) Search(ctx context.Context, query string, limit int) ([]string, error) {
	c, err := m.caller()
	if err != nil {
		return nil, err
	}
	texts, err := c.CallForMemories(ctx, m.cfg.Server, m.cfg.Search.Tool, fillArguments(m.cfg.Search.Arguments, "{query}", query))
	if err != nil {
		return nil, err
	}
	if len(texts) > limit {
		texts = texts[:limit]
	}
	return texts, nil
}

// Store calls the store tool with the text.
func (m mcpMemory) Store(ctx context.Context, text string) error {
	c, err := m.caller()
	if err != nil {
		return err
	}
	_, err = c.CallForMemories(ctx, m.cfg.Server, m.cfg.Store.Tool, fillArguments(m.cfg.Store.Arguments, "{text}", text))
	if err != nil {
		return fmt.Errorf("%s: %w", m.cfg.Store.Tool, err)
	}
	return nil
}

// fillArguments replaces placeholder in the JSON template by value,
// JSON-escaped (the placeholder stands inside a JSON string).
func fillArguments(template, placeholder, value string) json.RawMessage {
	b, _ := json.Marshal(value)
	return json.RawMessage(strings.ReplaceAll(template, placeholder, string(b[1:len(b)-1])))
}
