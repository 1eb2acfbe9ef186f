package apptest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/skills"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// pulseAndSkillAssistant adds a pulse item and saves a skill when asked,
// and confirms tool results.
func pulseAndSkillAssistant(req llmtest.ChatRequest) llmtest.ServerReply {
	last := req.Messages[len(req.Messages)-1]
	switch user := lastUser(req); {
	case last.Role == "tool":
		return llmtest.ServerReply{Text: "Done."}
	case strings.HasPrefix(user, "[SYSTEM EVENT]"):
		return llmtest.ServerReply{Text: "Hello, I'm Reverie."}
	case strings.Contains(user, "track the auth bug"):
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{
			ID: "call_p", Name: "pulse", Arguments: json.RawMessage(`{"action":"add","text":"Fix auth bug","priority":2}`),
		}}}
	case strings.Contains(user, "save the deploy procedure"):
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{
			ID: "call_s", Name: "add_skill",
			Arguments: json.RawMessage(`{"name":"deploy-blog","summary":"Deploy the blog","content":"1. hugo --minify\n2. rsync public/ host:/srv"}`),
		}}}
	default:
		return llmtest.ServerReply{Text: "ok"}
	}
}

func TestPulseAndSkillToolsReachThePrompt(t *testing.T) {
	h := Start(t)
	h.Model.Handle(pulseAndSkillAssistant)
	ctx := context.Background()
	thread := chat.NewThreadID(ChannelName, "erin")

	h.Send(t, "erin", "please track the auth bug")
	h.Channel.WaitFor(t, "erin", 1)
	it, err := h.App.Pulse.Get(ctx, 1)
	if err != nil {
		t.Fatalf("pulse item not stored: %v", err)
	}
	if it.Text != "Fix auth bug" || it.Priority != 2 || it.Status != pulse.StatusActive || it.Thread != thread || it.Source != pulse.SourceAgent {
		t.Errorf("item = %+v", it)
	}

	h.Send(t, "erin", "and save the deploy procedure")
	h.Channel.WaitFor(t, "erin", 2)
	body, err := os.ReadFile(filepath.Join(h.DataDir, "skills", "deploy-blog.md"))
	if err != nil || !strings.HasPrefix(string(body), "Deploy the blog\n\n1. hugo") {
		t.Fatalf("skill file: %q, %v", body, err)
	}

	h.Send(t, "erin", "what's next?")
	h.Channel.WaitFor(t, "erin", 3)
	reqs := h.Model.ChatRequests()
	var system string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "system" {
			system = m.Text()
		}
	}
	for _, want := range []string{"# Active Pulse\n[P2] #1: Fix auth bug", "### Skill: deploy-blog\nDeploy the blog", "## Pulse: work in progress", "## Skills"} {
		if !strings.Contains(system, want) {
			t.Errorf("the next turn's system prompt lacks %q:\n%s", want, system)
		}
	}
	var offered []string
	for _, tl := range reqs[len(reqs)-1].Tools {
		offered = append(offered, tl.Function.Name)
	}
	for _, name := range []string{"pulse", "add_skill", "read_skill"} {
		if !strings.Contains(","+strings.Join(offered, ",")+",", ","+name+",") {
			t.Errorf("tool %s not offered: %v", name, offered)
		}
	}

	// Which skills went into the thread's prompts is recorded.
	loads, err := h.App.Skills.Loads(ctx, skills.LoadFilter{Thread: thread, Skill: "deploy-blog"})
	if err != nil || len(loads) != 1 || loads[0].Mode != skills.LoadFull {
		t.Errorf("skill loads = %+v, %v", loads, err)
	}

	// /pulse lists the active items without a model call.
	n := len(h.Model.ChatRequests())
	res, err := h.App.Router.Handle(ctx, chat.Inbound{Address: chat.Address{Channel: ChannelName, Thread: thread}, Text: "/pulse"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Reply, "[P2] #1: Fix auth bug") {
		t.Errorf("/pulse = %q", res.Reply)
	}
	if len(h.Model.ChatRequests()) != n {
		t.Error("/pulse called the model")
	}
}
