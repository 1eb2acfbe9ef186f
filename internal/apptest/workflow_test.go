package apptest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// systemText is the system prompt of a request.
func systemText(req llmtest.ChatRequest) string {
	for _, m := range req.Messages {
		if m.Role == "system" {
			return m.Text()
		}
	}
	return ""
}

// workflowAssistant plays the main agent and its workers: asked to compare
// two cities, the agent spawns a research worker, then a comparison worker
// depending on it, and relays the results that come back as system events.
type workflowAssistant struct {
	mu       sync.Mutex
	research string // the research worker's id, from the tool result
	compare  string // the comparison worker's system prompt
}

func (w *workflowAssistant) handle(req llmtest.ChatRequest) llmtest.ServerReply {
	sys := systemText(req)
	last := req.Messages[len(req.Messages)-1]
	switch {
	case strings.Contains(sys, "## Objective\nFind the weather in Paris"):
		return llmtest.ServerReply{Text: "Paris: sunny, 24°C."}
	case strings.Contains(sys, "## Objective\nCompare"):
		w.mu.Lock()
		w.compare = sys
		w.mu.Unlock()
		return llmtest.ServerReply{Text: "Paris is warmer than Rome today."}
	case last.Role == "tool":
		var res struct {
			ID string `json:"session_id"`
		}
		// Tool results reach the model fenced as untrusted data.
		content, _ := toolloop.Unfence(last.Text())
		json.Unmarshal([]byte(content), &res)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.research == "" {
			w.research = res.ID
			args, _ := json.Marshal(map[string]any{"objective": "Compare the weather of Paris with Rome (22°C)", "depends_on": []string{res.ID}})
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_2", Name: workflow.ToolSpawn, Arguments: args}}}
		}
		return llmtest.ServerReply{Text: "I have started two background workers; the answer follows."}
	case strings.Contains(lastUser(req), "Sub-session"):
		line, _, _ := strings.Cut(strings.TrimPrefix(lastUser(req), "[SYSTEM EVENT] "), "\n")
		body := lastUser(req)[strings.LastIndex(lastUser(req), "Result:\n")+len("Result:\n"):]
		return llmtest.ServerReply{Text: "Update (" + line + "): " + body}
	case strings.HasPrefix(lastUser(req), "[SYSTEM EVENT]"):
		return llmtest.ServerReply{Text: "Hello, I'm Reverie."}
	case strings.Contains(lastUser(req), "compare the weather"):
		args, _ := json.Marshal(map[string]any{"objective": "Find the weather in Paris", "profile": "researcher"})
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: workflow.ToolSpawn, Arguments: args}}}
	}
	return llmtest.ServerReply{Text: "ok"}
}

// A user message makes the assistant spawn two sub-sessions, the second
// depending on the first; both run on the sub_sessions role, and their
// results arrive in the user's thread, relayed by the assistant.
func TestSubSessionsEndToEnd(t *testing.T) {
	h := Start(t)
	w := &workflowAssistant{}
	h.Model.Handle(w.handle)

	h.Send(t, "alice", "please compare the weather in Paris and Rome")
	// The reply (greeting the new conversation in the same call), then the
	// two relayed results.
	msgs := h.Channel.WaitFor(t, "alice", 3)
	for i, m := range msgs {
		t.Logf("delivered %d (%s): %q", i, m.Kind, m.Text)
	}
	if msgs[0].Text != "I have started two background workers; the answer follows." {
		t.Errorf("reply = %q", msgs[0].Text)
	}
	var relayed []string
	for _, m := range msgs[1:] {
		if m.Kind != chat.Notify {
			t.Errorf("relay kind %s", m.Kind)
		}
		relayed = append(relayed, m.Text)
	}
	all := strings.Join(relayed, "\n")
	if !strings.Contains(all, "Paris: sunny, 24°C.") || !strings.Contains(relayed[len(relayed)-1], "Paris is warmer than Rome today.") {
		t.Errorf("relayed results:\n%s", all)
	}
	w.mu.Lock()
	compare := w.compare
	research := w.research
	w.mu.Unlock()
	if !strings.Contains(compare, "### "+research+": Find the weather in Paris\nParis: sunny, 24°C.") {
		t.Errorf("the comparison worker did not get the research result:\n%s", compare)
	}

	// The workflow is visible with both nodes completed, merged into one.
	ctx := context.Background()
	ws, err := h.App.Workflows.ListWorkflows(ctx, workflow.ListOptions{Thread: chat.NewThreadID(ChannelName, "alice")})
	if err != nil || len(ws) != 1 {
		t.Fatalf("workflows: %+v, %v", ws, err)
	}
	if ws[0].State != workflow.StateCompleted || len(ws[0].Nodes) != 2 || ws[0].Nodes[1].DependsOn[0] != research {
		t.Errorf("workflow: %+v", ws[0])
	}
	if got := ws[0].Nodes[0].Tools; strings.Join(got, ",") != "read_file,fetch_url,search_web" {
		t.Errorf("researcher profile tools: %v", got)
	}
	// Through the HTTP API service too.
	aw, err := h.App.API.Workflows.Get(ctx, ws[0].ID)
	if err != nil || aw.State != "completed" || len(aw.Nodes) != 2 {
		t.Errorf("api workflow: %+v, %v", aw, err)
	}
	outs, err := h.App.Workflows.Outcomes(ctx, workflow.OutcomeFilter{})
	if err != nil || len(outs) != 2 {
		t.Errorf("outcomes: %+v, %v", outs, err)
	}
}

// A reply claiming a background worker that was never spawned gets the
// supervisor's corrective system event; the assistant then really spawns
// it and the result arrives.
func TestSpawnClaimCorrected(t *testing.T) {
	h := Start(t)
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		sys, user := systemText(req), lastUser(req)
		last := req.Messages[len(req.Messages)-1]
		switch {
		case strings.Contains(sys, "## Objective\nLook into flights"):
			return llmtest.ServerReply{Text: "Flights: three options under 200 EUR."}
		case last.Role == "tool":
			return llmtest.ServerReply{Text: "Now it really runs."}
		case strings.Contains(user, "[SUPERVISOR]"):
			args, _ := json.Marshal(map[string]any{"objective": "Look into flights to Lisbon"})
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: workflow.ToolSpawn, Arguments: args}}}
		case strings.Contains(user, "Sub-session"):
			return llmtest.ServerReply{Text: "Result: " + user[strings.LastIndex(user, "Result:\n")+len("Result:\n"):]}
		case strings.HasPrefix(user, "[SYSTEM EVENT]"):
			return llmtest.ServerReply{Text: "Hello."}
		case strings.Contains(user, "flights"):
			return llmtest.ServerReply{Text: "I've started a background worker to look into flights."}
		}
		return llmtest.ServerReply{Text: "ok"}
	})
	h.Send(t, "bob", "look into flights to Lisbon for me")
	msgs := h.Channel.WaitFor(t, "bob", 3)
	if msgs[1].Text != "Now it really runs." || msgs[2].Text != "Result: Flights: three options under 200 EUR." {
		for i, m := range msgs {
			t.Logf("delivered %d (%s): %q", i, m.Kind, m.Text)
		}
		t.Fatal("the claim was not corrected into a real spawn")
	}
	entries, err := h.App.Interactions.List(context.Background(), interactions.Filter{Action: interactions.ActionSupervisorCheck})
	if err != nil || len(entries) != 1 || !strings.Contains(entries[0].Summary, "spawn") {
		t.Errorf("supervisor verdict: %+v, %v", entries, err)
	}
}
