package mcp

import (
	"context"
	"errors"
	"testing"
)

// An unknown server's error names the servers that can be read, and says
// so when there are none.
func TestReadMemoriesUnknownServer(t *testing.T) {
	off := false
	tests := []struct {
		name    string
		servers map[string]ServerConfig
		want    string
	}{
		{"none configured", nil, `no such MCP server "kg": none is configured in mcp.servers`},
		{"only a switched-off one", map[string]ServerConfig{"old": {Command: "old-memory", Enabled: &off}},
			`no such MCP server "kg": none is configured in mcp.servers`},
		{"others configured", map[string]ServerConfig{"mem": {Command: "memory-server"}, "old": {Command: "old-memory", Enabled: &off}},
			`no such MCP server "kg" in mcp.servers (configured: mem)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMemories(context.Background(), Config{Servers: tc.servers}, t.TempDir(), "kg", "read_graph", nil)
			if !errors.Is(err, ErrUnknownServer) || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
