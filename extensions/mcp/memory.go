package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnknownServer is returned for a server name not in mcp.servers (or
// switched off).
var ErrUnknownServer = errors.New("no such MCP server")

// unknownServer is ErrUnknownServer for name, naming the servers that are
// configured and on.
func unknownServer(cfg Config, name string) error {
	var on []string
	for _, n := range cfg.names() {
		if cfg.Servers[n].on() {
			on = append(on, n)
		}
	}
	if len(on) == 0 {
		return fmt.Errorf("%w %q: none is configured in mcp.servers", ErrUnknownServer, name)
	}
	return fmt.Errorf("%w %q in mcp.servers (configured: %s)", ErrUnknownServer, name, strings.Join(on, ", "))
}

// ReadMemories starts the server called name once, calls its tool with
// args (a JSON object), stops it, and returns the memories the result holds
// (see MemoryTexts). It is how `reverie memory import --from-mcp` reads an
// external memory store.
func ReadMemories(ctx context.Context, cfg Config, dataDir, name, toolName string, args json.RawMessage) ([]string, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sc, ok := cfg.Servers[name]
	if !ok || !sc.on() {
		return nil, unknownServer(cfg, name)
	}
	s := newServer(name, sc, dataDir, slog.New(slog.DiscardHandler), &sdk.Implementation{Name: "reverie-import", Version: version}, time.Now)
	cs, _, err := s.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", name, err)
	}
	defer cs.Close()
	cctx, cancel := context.WithTimeout(ctx, sc.Timeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: toolName, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %s: %w", name, toolName, err)
	}
	return resultMemories(res, name, toolName)
}

// resultMemories are the memories a memory tool's result holds: from its
// structured content when it has some, else from its text.
func resultMemories(res *sdk.CallToolResult, server, toolName string) ([]string, error) {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	if res.IsError {
		return nil, fmt.Errorf("MCP server %s: %s failed: %s", server, toolName, strings.Join(texts, " "))
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return MemoryTexts(string(b)), nil
		}
	}
	return MemoryTexts(strings.Join(texts, "\n")), nil
}

// CallForMemories calls toolName on the running server called name and
// returns the memories its result holds (see MemoryTexts): the search and
// store of the mcp memory backend (memory.backend: mcp).
func (m *MCP) CallForMemories(ctx context.Context, name, toolName string, args json.RawMessage) ([]string, error) {
	for _, s := range m.servers {
		if s.name == name {
			res, err := s.callRaw(ctx, toolName, args)
			if err != nil {
				return nil, err
			}
			return resultMemories(res, name, toolName)
		}
	}
	return nil, fmt.Errorf("%w %q (memory.mcp.server must name an enabled server of mcp.servers)", ErrUnknownServer, name)
}

// MemoryTexts extracts memories from what a memory server's tool returned:
//
//   - a knowledge graph ({"entities":[{"name":…,"observations":[…]}]}, as
//     @modelcontextprotocol/server-memory's read_graph and search_nodes):
//     one memory "<name>: <observation>" per observation;
//   - a list of items, bare or under "results", "memories" or "items"
//     (OpenMemory and most stores): each item's "memory", "text" or
//     "content" string, or the item itself when it is a string;
//   - anything else: its non-empty lines.
//
// Duplicates are dropped; the order is kept.
func MemoryTexts(result string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		s = strings.Join(strings.Fields(s), " ")
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	var doc any
	if err := json.Unmarshal([]byte(result), &doc); err != nil {
		for _, l := range strings.Split(result, "\n") {
			add(l)
		}
		return out
	}
	var items []any
	switch d := doc.(type) {
	case []any:
		items = d
	case map[string]any:
		if ents, ok := d["entities"].([]any); ok {
			for _, e := range ents {
				ent, _ := e.(map[string]any)
				name, _ := ent["name"].(string)
				obs, _ := ent["observations"].([]any)
				for _, o := range obs {
					if s, ok := o.(string); ok {
						if name != "" {
							s = name + ": " + s
						}
						add(s)
					}
				}
			}
			return out
		}
		for _, k := range []string{"results", "memories", "items"} {
			if l, ok := d[k].([]any); ok {
				items = l
				break
			}
		}
		if items == nil {
			items = []any{d}
		}
	case string:
		add(d)
		return out
	}
	for _, it := range items {
		switch v := it.(type) {
		case string:
			add(v)
		case map[string]any:
			for _, k := range []string{"memory", "text", "content"} {
				if s, ok := v[k].(string); ok {
					add(s)
					break
				}
			}
		}
	}
	return out
}
