package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

type recorder struct {
	mu      sync.Mutex
	topics  []string
	entries []interactions.Entry
}

func (r *recorder) Publish(_ context.Context, topic string, _ any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.topics = append(r.topics, topic)
	return nil
}

func (r *recorder) Log(_ context.Context, es ...interactions.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, es...)
	return nil
}

type lookupArgs struct {
	Word string `json:"word"`
}

// tools are what the runner chooses from: lookup (research), write
// (execution) and another agent's tool.
func testTools(seen *[]tool.Call) []tool.Tool {
	return []tool.Tool{
		tool.New("lookup", "Looks a word up.", func(ctx context.Context, a lookupArgs) (any, error) {
			c, _ := tool.CallFrom(ctx)
			*seen = append(*seen, c)
			return "a greeting", nil
		}, tool.WithCategories("research")),
		tool.New("write", "Writes.", func(context.Context, lookupArgs) (any, error) { return "ok", nil }, tool.WithCategories("execution")),
		tool.New("agent_other", "Another agent.", func(context.Context, Args) (any, error) { return "no", nil }),
	}
}

// A run has the agent's prompt and only its tools, carries the turn's
// thread with Delegate set, returns the answer with the calls, and
// reports its progress and its run.
func TestRunnerRun(t *testing.T) {
	var seen []tool.Call
	model := llmtest.NewScripted(t,
		llmtest.CallTool("lookup", `{"word":"hello"}`),
		llmtest.Reply("Hello is a greeting."))
	rec := &recorder{}
	r, err := NewRunner(RunnerOptions{
		Model: func(role string) toolloop.Model {
			if role != "scout" {
				t.Errorf("model role %q", role)
			}
			return model
		},
		Tools: func() []tool.Tool { return testTools(&seen) }, Events: rec, Interactions: rec,
		Now: func() time.Time { return time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "lexicographer", Description: "Defines words.", Prompt: "You define words precisely.", Role: "scout",
		Tools: []string{"@research", "missing_tool"}}
	tl := r.Tool(spec)
	if tl.Name() != "agent_lexicographer" || !tool.ReturnsUntrusted(tl) || !strings.Contains(tl.Description(), "Defines words.") {
		t.Fatalf("tool %s %q", tl.Name(), tl.Description())
	}
	ctx := tool.WithCall(context.Background(), tool.Call{Thread: chat.ThreadID("web:a"), Agent: "main"})
	res, err := tl.Call(ctx, json.RawMessage(`{"task":"define hello","context":"for a child"}`))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := evidence.Decode(res.Content)
	if !ok || p.Kind != evidence.AgentResult || p.Meta.Source != "agent_lexicographer" || len(p.Items) != 2 ||
		p.Items[0] != (evidence.Item{Label: "answer", Text: "Hello is a greeting."}) ||
		p.Items[1] != (evidence.Item{Title: "lookup", Label: "tool call", Text: `{"word":"hello"}`}) {
		t.Errorf("result %s", res.Content)
	}
	req := model.Requests()[0]
	if !strings.Contains(req.System, "You define words precisely.") || !strings.Contains(req.System, "untrusted data") {
		t.Errorf("system prompt %q", req.System)
	}
	var offered []string
	for _, s := range req.Tools {
		offered = append(offered, s.Name)
	}
	if !slices.Equal(offered, []string{"lookup"}) {
		t.Errorf("tools offered %v", offered)
	}
	if len(req.Messages) != 1 || !strings.Contains(req.Messages[0].Text(), "define hello") || !strings.Contains(req.Messages[0].Text(), "for a child") {
		t.Errorf("messages %+v", req.Messages)
	}
	if len(seen) != 1 || seen[0].Thread != "web:a" || seen[0].Delegate != "lexicographer" || seen[0].Agent != "agent_lexicographer" {
		t.Errorf("calls ran with %+v", seen)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.topics, []string{TopicStarted, TopicToolCall, TopicCompleted}) {
		t.Errorf("events %v", rec.topics)
	}
	if len(rec.entries) != 2 || rec.entries[0].Action != ActionAgent || rec.entries[1].Action != interactions.ActionToolCall {
		t.Fatalf("log %+v", rec.entries)
	}
	var detail struct {
		System  string   `json:"system_prompt"`
		Tools   []string `json:"tools"`
		Missing []string `json:"missing_tools"`
	}
	if err := json.Unmarshal(rec.entries[0].Detail, &detail); err != nil || !strings.Contains(detail.System, "You define words") ||
		!slices.Equal(detail.Tools, []string{"lookup"}) || !slices.Equal(detail.Missing, []string{"missing_tool"}) {
		t.Errorf("logged detail %s (%v)", rec.entries[0].Detail, err)
	}
	if _, err := tl.Call(ctx, json.RawMessage(`{"task":" "}`)); err == nil {
		t.Error("an empty task ran")
	}
}

// A run that outlives its time ends with an error naming the calls it
// made; a model failure is an error too. Either is a failed tool call,
// data for the model.
func TestRunnerFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []tool.Call
		slow := llmtest.Func(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			if len(req.Messages) == 1 {
				return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCall{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"word":"x"}`)}}}}, nil
			}
			<-ctx.Done()
			return llm.Response{}, ctx.Err()
		})
		rec := &recorder{}
		r, err := NewRunner(RunnerOptions{Model: func(string) toolloop.Model { return slow },
			Tools: func() []tool.Tool { return testTools(&seen) }, Events: rec, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Run(context.Background(), Spec{Name: "slow", Prompt: "p", Description: "d", Role: DefaultRole}, Task{Task: "t"})
		if err == nil || !strings.Contains(err.Error(), "ran out of its 1m0s") || !strings.Contains(err.Error(), "1 tool calls (lookup)") {
			t.Errorf("err = %v", err)
		}
		if rec.topics[len(rec.topics)-1] != TopicFailed {
			t.Errorf("events %v", rec.topics)
		}
	})
	broken := llmtest.NewScripted(t, llmtest.Fail(errors.New("provider down")))
	r, _ := NewRunner(RunnerOptions{Model: func(string) toolloop.Model { return broken }, Tools: func() []tool.Tool { return nil }})
	if _, err := r.Run(context.Background(), Spec{Name: "x", Prompt: "p", Description: "d"}, Task{Task: "t"}); err == nil || !strings.Contains(err.Error(), "provider down") {
		t.Errorf("err = %v", err)
	}
}
