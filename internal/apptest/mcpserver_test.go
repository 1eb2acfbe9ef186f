package apptest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/mcp"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// startWebWithMCP runs the app with the web and mcp extensions.
func startWebWithMCP(t *testing.T) *WebHarness {
	t.Helper()
	info, ok := extension.Lookup(mcp.ID)
	if !ok {
		t.Fatal("the mcp extension is not registered")
	}
	return StartWeb(t, WithExtensions(info))
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, tr sdk.Transport) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "apptest", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s failed: %s", name, b.String())
	}
	return b.String()
}

var reverieTools = []string{"search_memory", "remember", "list_pulse", "add_pulse_item", "set_reminder", "list_reminders", "send_message"}

// exerciseReverieServer runs every tool and reads the resources.
func exerciseReverieServer(t *testing.T, cs *sdk.ClientSession) {
	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range lt.Tools {
		got = append(got, tl.Name)
	}
	for _, want := range reverieTools {
		if !slices.Contains(got, want) {
			t.Errorf("tools %v lack %s", got, want)
		}
	}

	callText(t, cs, "remember", map[string]any{"text": "The user's cat is called Miso."})
	if out := callText(t, cs, "search_memory", map[string]any{"query": "cat name"}); !strings.Contains(out, "Miso") {
		t.Errorf("search_memory = %s", out)
	}
	callText(t, cs, "add_pulse_item", map[string]any{"text": "Finish the MCP tests", "priority": 2})
	if out := callText(t, cs, "list_pulse", map[string]any{}); !strings.Contains(out, "Finish the MCP tests") {
		t.Errorf("list_pulse = %s", out)
	}
	callText(t, cs, "set_reminder", map[string]any{"text": "stretch", "in": "20m"})
	if out := callText(t, cs, "list_reminders", map[string]any{}); !strings.Contains(out, "stretch") {
		t.Errorf("list_reminders = %s", out)
	}
	var sent struct{ Thread, Reply string }
	if err := json.Unmarshal([]byte(callText(t, cs, "send_message", map[string]any{"text": "hello from MCP"})), &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Reply != "ok" || sent.Thread != string(mcp.DefaultThread) {
		t.Errorf("send_message = %+v", sent)
	}
	// A refused argument is a tool error the client can read.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "set_reminder", Arguments: map[string]any{"text": "x", "in": "soon"}})
	if err != nil || !res.IsError {
		t.Errorf("set_reminder with a bad duration: %+v, %v", res, err)
	}
	// A service's refusal reads as a sentence, as the CLI and the HTTP API
	// say it: no "invalid: " in front.
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "remember", Arguments: map[string]any{"text": " "}})
	if err != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "memory text is empty" {
		t.Errorf("remember with empty text: %+v, %v", res, err)
	}

	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	for _, want := range []string{"reverie://MEMORIES.txt", "reverie://world_state.json"} {
		if !slices.Contains(uris, want) {
			t.Errorf("resources %v lack %s", uris, want)
		}
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "reverie://world_state.json"})
	if err != nil || len(rr.Contents) != 1 || !json.Valid([]byte(rr.Contents[0].Text)) {
		t.Errorf("world state resource: %+v, %v", rr, err)
	}
}

func TestReverieMCPServerOverStreamableHTTP(t *testing.T) {
	w := startWebWithMCP(t)
	cs := connect(t, &sdk.StreamableClientTransport{Endpoint: w.Base + "/mcp", HTTPClient: &http.Client{Transport: bearer{w.Token}}})
	exerciseReverieServer(t, cs)
}

func TestReverieMCPEndpointAuth(t *testing.T) {
	w := startWebWithMCP(t)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	cases := []struct {
		name    string
		auth    string
		headers map[string]string
		host    string
		want    int
	}{
		{"token", "Bearer " + w.Token, nil, "", http.StatusOK},
		{"no token", "", nil, "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope-nope-nope-nope", nil, "", http.StatusUnauthorized},
		{"cross-site browser request", "Bearer " + w.Token, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"foreign Host (DNS rebinding)", "Bearer " + w.Token, nil, "evil.example", http.StatusMisdirectedRequest},
		{"text/plain body", "Bearer " + w.Token, map[string]string{"Content-Type": "text/plain"}, "", http.StatusUnsupportedMediaType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, w.Base+"/mcp", strings.NewReader(initBody))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
		})
	}
}

func TestReverieMCPServerOverStdio(t *testing.T) {
	h := Start(t)
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply { return llmtest.ServerReply{Text: "ok"} })
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcp.ServeStdio(ctx, h.App.API, h.DataDir, serverIn, serverOut) }()
	t.Cleanup(func() {
		cancel()
		clientOut.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	cs := connect(t, &sdk.IOTransport{Reader: clientIn, Writer: clientOut})
	exerciseReverieServer(t, cs)
}
