package apptest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// lastUser is the text of the last user message of a request.
func lastUser(req llmtest.ChatRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Text()
		}
	}
	return ""
}

// greets reports whether the request opens a new conversation in the same
// call that answers its first message: the seed (with the greeting note)
// comes before the message, and nothing has been answered yet.
func greets(req llmtest.ChatRequest) bool {
	users := 0
	for _, m := range req.Messages {
		switch {
		case m.Role == "assistant" && m.Text() != "":
			return false
		case m.Role == "user" && users == 0:
			if !strings.HasPrefix(m.Text(), agent.SystemEventPrefix) || !strings.Contains(m.Text(), agent.GreetNote) {
				return false
			}
			users++
		case m.Role == "user":
			users++
		}
	}
	return users >= 2
}

// Greeting opens the first reply of a conversation (see greets).
const Greeting = "Hello, I'm Reverie. "

// scriptedAssistant answers the seed with a greeting, "write a note" with a
// write_file tool call, and a tool result with a confirmation (opened by the
// greeting when it answers a new conversation's first message).
func scriptedAssistant(req llmtest.ChatRequest) llmtest.ServerReply {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == "tool":
		text := "Saved it to notes/today.txt."
		if greets(req) {
			text = Greeting + text
		}
		return llmtest.ServerReply{Text: text, Usage: llm.Usage{InputTokens: 50, OutputTokens: 8}}
	case strings.HasPrefix(lastUser(req), "[SYSTEM EVENT]"):
		return llmtest.ServerReply{Text: "Hello, I'm Reverie. What are you working on?"}
	case strings.Contains(lastUser(req), "write a note"):
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{
			ID: "call_1", Name: "write_file",
			Arguments: json.RawMessage(`{"path":"notes/today.txt","content":"buy milk"}`),
		}}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 12}}
	default:
		return llmtest.ServerReply{Text: "ok"}
	}
}

func TestMessageToolCallReply(t *testing.T) {
	h := Start(t)
	h.Model.Handle(scriptedAssistant)

	h.Send(t, "alice", "please write a note: buy milk")
	// One delivery: the new conversation is greeted in the reply itself.
	msgs := h.Channel.WaitFor(t, "alice", 1)
	if msgs[0].Text != Greeting+"Saved it to notes/today.txt." || msgs[0].Kind != chat.Reply {
		t.Errorf("reply = %+v", msgs[0])
	}

	// The tool really ran, confined to the workspace.
	body, err := os.ReadFile(filepath.Join(h.DataDir, "workspace", "notes", "today.txt"))
	if err != nil || string(body) != "buy milk" {
		t.Fatalf("note file: %q, %v", body, err)
	}

	// The model saw the tool result, and the request carried the assembled prompt and tools.
	// The time comes in the turn context, a message after the history.
	var sawTool, sawPrompt, sawTime bool
	for _, req := range h.Model.ChatRequests() {
		for _, m := range req.Messages {
			if m.Role == "tool" && strings.Contains(m.Text(), "notes/today.txt") {
				sawTool = true
			}
			if m.Role == "system" && strings.Contains(m.Text(), "# Core Instructions") {
				sawPrompt = true
			}
			if m.Role == "user" && strings.HasPrefix(m.Text(), agent.TurnContextPrefix) && strings.Contains(m.Text(), "# Current Time") {
				sawTime = true
			}
		}
		if len(req.Tools) == 0 && !strings.HasPrefix(lastUser(req), "[SYSTEM EVENT]") {
			t.Errorf("a turn request offered no tools")
		}
	}
	if !sawTool || !sawPrompt || !sawTime {
		t.Errorf("tool result sent back: %v; system prompt assembled: %v; time in the turn context: %v", sawTool, sawPrompt, sawTime)
	}

	// Stored in order: seed event, seed reply, user, assistant tool call, tool result, reply.
	ctx := context.Background()
	hist, err := h.App.Conversations.History(ctx, chat.NewThreadID(ChannelName, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range hist {
		roles = append(roles, string(m.Message.Role))
	}
	if got := strings.Join(roles, ","); !strings.HasSuffix(got, "user,assistant,tool,assistant") {
		t.Errorf("stored roles = %s", got)
	}

	// Interaction log and usage accounting.
	entries, err := h.App.Interactions.List(ctx, interactions.Filter{Action: "tool_call"})
	if err != nil || len(entries) == 0 {
		t.Fatalf("tool_call interactions: %d, %v", len(entries), err)
	}
	usage, err := h.App.Models.Usage(ctx, "", "")
	if err != nil || len(usage) == 0 || usage[0].InputTokens == 0 {
		t.Fatalf("usage = %+v, %v", usage, err)
	}
}

func TestSlashCommandAndSyncHandle(t *testing.T) {
	h := Start(t)
	h.Model.Handle(scriptedAssistant)
	res, err := h.App.Router.Handle(context.Background(), chat.Inbound{
		Address: chat.Address{Channel: ChannelName, Thread: chat.NewThreadID(ChannelName, "bob")},
		Text:    "/status",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Reply, "gpt-test") {
		t.Errorf("/status should name the model: %q", res.Reply)
	}
	if n := len(h.Model.ChatRequests()); n != 0 {
		t.Errorf("/status made %d model calls", n)
	}
}

func TestModelFailureKeepsMessage(t *testing.T) {
	h := Start(t)
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Status: 401, ErrorMessage: "invalid api key"}
	})
	h.Send(t, "carol", "remember that my sister is called Ana")
	msgs := h.Channel.WaitFor(t, "carol", 1)
	last := msgs[len(msgs)-1]
	if last.Kind != chat.Error && !strings.Contains(strings.ToLower(last.Text), "model") {
		t.Errorf("failure reply = %+v", last)
	}
	hist, err := h.App.Conversations.History(context.Background(), chat.NewThreadID(ChannelName, "carol"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range hist {
		if m.Message.Role == llm.RoleUser && strings.Contains(m.Message.Text(), "sister is called Ana") {
			found = true
		}
	}
	if !found {
		t.Fatal("the user's message was lost when the model failed")
	}
}

func TestRestartKeepsConversation(t *testing.T) {
	h := Start(t)
	h.Model.Handle(scriptedAssistant)
	h.Send(t, "dave", "hello")
	h.Channel.WaitFor(t, "dave", 1)
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	// A new process on the same data dir sees the thread.
	h2 := restart(t, h)
	threads, err := h2.App.Conversations.Threads(context.Background(), conversationList())
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) == 0 || threads[0].ID != chat.NewThreadID(ChannelName, "dave") {
		t.Fatalf("threads after restart = %+v", threads)
	}
}

func restart(t *testing.T, h *Harness) *Harness {
	t.Helper()
	h2 := Start(t, WithDataDir(h.DataDir))
	h2.Model.Handle(scriptedAssistant)
	return h2
}

func conversationList() conversation.ListOptions { return conversation.ListOptions{} }
