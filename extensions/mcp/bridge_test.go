package mcp

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BridgeStdio writes every answer its client is owed before it returns,
// when the client's input ends right after its last request: the last
// answer was counted as delivered before it was written, so the bridge
// could close standard output with it unwritten (seen once under load in
// TestCommandsBesideARunningAgent: the last answer's write found the
// context already cancelled). Run many times, since the loss is a matter of
// scheduling; the window is narrow, so this rarely fails without the fix.
func TestBridgeStdioAnswersEveryRequestBeforeReturning(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "bridge-test", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "echo"},
		func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"last"}}}
`
	for i := range 40 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var out bytes.Buffer
		err := BridgeStdio(ctx, hs.URL, hs.Client(), strings.NewReader(in), &out)
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got := out.String(); !strings.Contains(got, `"id":1`) || !strings.Contains(got, `"id":2`) || !strings.Contains(got, "echo: last") {
			t.Fatalf("run %d: the bridge returned without every answer:\n%s", i, got)
		}
	}
}
