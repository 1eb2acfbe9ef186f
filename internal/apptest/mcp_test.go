package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/mcp"
	"github.com/reverie-ai/reverie/extensions/mcp/mcptest"
	"github.com/reverie-ai/reverie/internal/dreaming"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// startWithMCP runs the app with the mcp extension and configYAML as its
// config.yaml, and waits until every MCP server has settled (up or down).
func startWithMCP(t *testing.T, configYAML string) *Harness {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	info, ok := extension.Lookup(mcp.ID)
	if !ok {
		t.Fatal("the mcp extension is not registered")
	}
	h := Start(t, WithDataDir(dir), WithExtensions(info))
	ext, ok := h.App.Kernel.Extension(mcp.ID)
	if !ok {
		t.Fatal("the mcp extension is not loaded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := ext.(*mcp.MCP).WaitServers(ctx, func(sts []mcp.ServerStatus) bool {
		for _, st := range sts {
			if st.State == mcp.StateStarting || (st.State == mcp.StateDown && st.Restarts == 0 && st.Err == "") {
				return false
			}
			if st.State == mcp.StateUp && st.Refreshes == 0 && strings.HasPrefix(st.Name, "everything") {
				return false // server-everything announces more tools right after start
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("MCP servers did not settle: %v", err)
	}
	return h
}

func everythingConfig(p mcptest.Peers, extra string) string {
	args, _ := json.Marshal(append(slices.Clone(p.Everything), "stdio"))
	return fmt.Sprintf("mcp:\n  servers:\n    everything:\n      command: %q\n      args: %s\n%s", p.Node, args, extra)
}

// TestModelCallsAnMCPTool: a model scripted to call everything__echo gets
// the echo back through Reverie, with the server's schema offered to it.
func TestModelCallsAnMCPTool(t *testing.T) {
	p := mcptest.Find(t)
	h := startWithMCP(t, everythingConfig(p, ""))
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "tool":
			return llmtest.ServerReply{Text: "The server said: " + last.Text()}
		case strings.Contains(lastUser(req), "echo"):
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{
				ID: "call_1", Name: "everything__echo", Arguments: json.RawMessage(`{"message":"hi from Reverie"}`),
			}}}
		default:
			return llmtest.ServerReply{Text: "ok"}
		}
	})
	h.Send(t, "mcp", "please echo something")
	msgs := h.Channel.WaitFor(t, "mcp", 1)
	if got := msgs[len(msgs)-1].Text; !strings.Contains(got, "Echo: hi from Reverie") {
		t.Fatalf("reply = %q, want the echo", got)
	}
	var offered bool
	for _, req := range h.Model.ChatRequests() {
		for _, tl := range req.Tools {
			if tl.Function.Name == "everything__echo" && strings.Contains(string(tl.Function.Parameters), `"message"`) {
				offered = true
			}
		}
	}
	if !offered {
		t.Fatal("the model was not offered everything__echo with its schema")
	}
}

// TestMCPToolSelectionAndStatus: tools.deny accepts @mcp:<server>, and a
// server that cannot start is shown as down in /status while the agent
// keeps working.
func TestMCPToolSelectionAndStatus(t *testing.T) {
	p := mcptest.Find(t)
	h := startWithMCP(t, everythingConfig(p, "    broken:\n      command: /nonexistent/mcp-server\n")+
		"tools:\n  deny: [\"@mcp:everything\"]\n")
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply { return llmtest.ServerReply{Text: "ok"} })
	h.Send(t, "sel", "hello")
	h.Channel.WaitFor(t, "sel", 1)
	for _, req := range h.Model.ChatRequests() {
		for _, tl := range req.Tools {
			if strings.HasPrefix(tl.Function.Name, "everything__") {
				t.Fatalf("%s offered although tools.deny has @mcp:everything", tl.Function.Name)
			}
		}
	}
	h.Send(t, "sel", "/status")
	msgs := h.Channel.WaitFor(t, "sel", 2)
	status := msgs[len(msgs)-1].Text
	if !strings.Contains(status, "mcp:") || !strings.Contains(status, "broken is down") {
		t.Fatalf("/status does not show the down MCP server:\n%s", status)
	}
}

// TestServerMemoryAsMemoryBackend: with memory.backend: mcp,
// @modelcontextprotocol/server-memory holds the memories — what Reverie
// remembers is in its graph file, and recall (the model's search_memory
// included) searches it.
func TestServerMemoryAsMemoryBackend(t *testing.T) {
	p := mcptest.Find(t)
	graph := filepath.Join(t.TempDir(), "memory.jsonl")
	args, _ := json.Marshal(p.Memory)
	h := startWithMCP(t, fmt.Sprintf(`mcp:
  servers:
    kg:
      command: %q
      args: %s
      env: {MEMORY_FILE_PATH: %q}
memory:
  backend: mcp
  mcp:
    server: kg
    search: {tool: search_nodes, arguments: '{"query":"{query}"}'}
    store: {tool: create_entities, arguments: '{"entities":[{"name":"{text}","entityType":"memory","observations":["{text}"]}]}'}
`, p.Node, args, graph))
	ctx := context.Background()
	if _, err := h.App.Memory.Remember(ctx, memory.Memory{Text: `The user's cat is called "Miso".`, Kind: memory.KindFact, Source: memory.SourceUserExplicit}, false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(graph)
	if err != nil || !strings.Contains(string(data), `cat is called \"Miso\"`) {
		t.Fatalf("server-memory's graph file: %q, %v", data, err)
	}
	res, err := h.App.Memory.Search(ctx, memory.Query{Text: "Miso"})
	if err != nil || len(res) == 0 || !strings.Contains(res[0].Text, "Miso") {
		t.Fatalf("search = %+v, %v", res, err)
	}

	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "tool":
			return llmtest.ServerReply{Text: "Found: " + last.Text()}
		case strings.Contains(lastUser(req), "cat"):
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{
				ID: "call_1", Name: "search_memory", Arguments: json.RawMessage(`{"query":"Miso"}`),
			}}}
		default:
			return llmtest.ServerReply{Text: "ok"}
		}
	})
	h.Send(t, "mem", "what is my cat called?")
	msgs := h.Channel.WaitFor(t, "mem", 1)
	if got := msgs[len(msgs)-1].Text; !strings.Contains(got, "Miso") {
		t.Fatalf("reply = %q, want the memory from server-memory", got)
	}
	// The turn's episodes stay in Reverie's own store: the external server
	// holds facts only, and recall finds the episodes locally.
	if data, err := os.ReadFile(graph); err != nil || strings.Contains(string(data), "what is my cat called") {
		t.Errorf("an episode reached the external memory server: %q, %v", data, err)
	}
	eps, err := h.App.Memory.List(ctx, memory.Filter{Kinds: []memory.Kind{memory.KindEpisode}})
	if err != nil || len(eps) != 2 || eps[0].Thread != "test:mem" {
		t.Fatalf("local episodes %+v, %v; want the message and the reply", eps, err)
	}
	// (server-memory matches the whole query as a substring: one word.)
	res, err = h.App.Memory.Search(ctx, memory.Query{Text: "Miso", Peek: true})
	var fact, episode bool
	for _, r := range res {
		fact = fact || r.Kind == memory.KindFact && strings.Contains(r.Text, "Miso")
		episode = episode || r.Kind == memory.KindEpisode && r.Role == memory.RoleAssistant && strings.Contains(r.Text, "Miso")
	}
	if err != nil || !fact || !episode {
		t.Errorf("recall over both stores (the external fact and the local reply): %+v, %v", res, err)
	}

	// Dreaming condenses the local episodes of an old session into facts
	// kept locally (the external server consolidates its own), and a
	// revert restores them.
	oldAt := time.Now().Add(-10 * 24 * time.Hour)
	old, err := memory.Ingest(ctx, h.App.Memory.Store(), nil, chat.Inbound{Address: chat.Address{Channel: ChannelName, Thread: "test:mem"},
		Sender: chat.Sender{ID: "mem", DisplayName: "Mem"}, Text: "I adopted a kitten called Miso", Received: oldAt}, memory.Reply{Speaker: "Reverie", Text: "Congratulations!"})
	if err != nil {
		t.Fatal(err)
	}
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		if strings.Contains(lastUser(req), "worth remembering about the user") {
			return llmtest.ServerReply{Text: "- The user adopted a kitten called Miso."}
		}
		return llmtest.ServerReply{Text: "NONE"}
	})
	rep, err := h.App.Dreamer.Dream(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	var mc dreaming.ComponentReport
	for _, c := range rep.Components {
		if c.Name == "memories" {
			mc = c
		}
	}
	if mc.Status != dreaming.StatusOK || !strings.Contains(mc.Detail, "2 episode(s) condensed into 1 fact(s)") {
		t.Fatalf("memories component of the dream: %+v", mc)
	}
	facts, err := h.App.Memory.List(ctx, memory.Filter{Sources: []memory.Source{memory.SourceDream}})
	if err != nil || len(facts) != 1 || facts[0].Text != "The user adopted a kitten called Miso." {
		t.Fatalf("condensed facts %+v, %v", facts, err)
	}
	if data, err := os.ReadFile(graph); err != nil || strings.Contains(string(data), "adopted a kitten") {
		t.Errorf("a fact condensed from local episodes reached the external server: %q, %v", data, err)
	}
	if _, err := h.App.Dreamer.Revert(ctx, rep.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range old {
		if m, err := h.App.Memory.Get(ctx, id); err != nil || m.ValidTo != nil {
			t.Errorf("episode #%d after the revert: %+v, %v", id, m, err)
		}
	}
}
