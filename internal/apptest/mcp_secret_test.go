package apptest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/mcp"
	"github.com/reverie-ai/reverie/extensions/mcp/mcptest"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// An MCP server's environment secret that the server itself prints (the
// everything server's get-env tool) is redacted live, not only in the
// stored history: in the POST reply's tool calls, the WebSocket's
// tool_result frames, every model request and every table of reverie.db
// (the turn journal included).
func TestMCPEnvSecretRedactedLive(t *testing.T) {
	const secret = "mcp-env-secret-9f3b2c7d1e"
	p := mcptest.Find(t)
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"),
		[]byte(everythingConfig(p, "      env: {API_TOKEN: "+secret+"}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	info, ok := extension.Lookup(mcp.ID)
	if !ok {
		t.Fatal("the mcp extension is not registered")
	}
	w := StartWeb(t, WithDataDir(dir), WithExtensions(info))
	ext, _ := w.App.Kernel.Extension(mcp.ID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ext.(*mcp.MCP).WaitServers(ctx, func(sts []mcp.ServerStatus) bool {
		return len(sts) == 1 && sts[0].State == mcp.StateUp && sts[0].Refreshes > 0
	}); err != nil {
		t.Fatalf("the everything server did not come up: %v", err)
	}
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "tool":
			return llmtest.ServerReply{Text: "The environment: " + last.Text()}
		case strings.Contains(lastUser(req), "environment"):
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_env", Name: "everything__get-env", Arguments: json.RawMessage(`{}`)}}}
		}
		return llmtest.ServerReply{Text: "ok"}
	})

	var reply api.Reply
	w.JSON(t, "POST", "/threads/web:env/messages", map[string]string{"text": "show me the environment"}, 200, &reply)
	body, _ := json.Marshal(reply)
	if len(reply.ToolCalls) != 1 || !strings.Contains(string(body), redact.Marker) {
		t.Fatalf("the get-env call did not run or its result was not redacted: %s", body)
	}
	c := dialWS(t, w, "?thread=web:env2")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:env2", Text: "the environment again"})
	frames := readReply(t, c)
	var sawResult bool
	for _, f := range frames {
		b, _ := json.Marshal(f)
		sawResult = sawResult || f.Type == api.FrameToolResult
		if strings.Contains(string(b), secret) {
			t.Errorf("WebSocket frame holds the secret: %s", b)
		}
	}
	if !sawResult {
		t.Error("no tool_result frame: the check is vacuous")
	}
	if strings.Contains(string(body), secret) {
		t.Errorf("POST reply holds the secret: %s", body)
	}
	for i, req := range w.Model.ChatRequests() {
		b, _ := json.Marshal(req)
		if strings.Contains(string(b), secret) {
			t.Errorf("model request %d holds the secret", i)
		}
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	scanDatabaseFor(t, filepath.Join(dir, "reverie.db"), secret)
}
