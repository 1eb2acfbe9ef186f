package toolloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// step is one scripted model reply. It may inspect the request.
type step func(ctx context.Context, req llm.Request) (llm.Response, error)

// fakeModel replays a script of steps and records every request.
type fakeModel struct {
	mu    sync.Mutex
	steps []step
	reqs  []llm.Request
}

func script(steps ...step) *fakeModel { return &fakeModel{steps: steps} }

func (f *fakeModel) Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	f.mu.Lock()
	req.Messages = slices.Clone(req.Messages)
	f.reqs = append(f.reqs, req)
	if len(f.steps) == 0 {
		f.mu.Unlock()
		return llm.Response{}, errors.New("fake model: script exhausted")
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	f.mu.Unlock()
	resp, err := s(ctx, req)
	if err == nil && stream != nil {
		if text := resp.Message.Text(); text != "" {
			stream(llm.Event{Kind: llm.EventTextDelta, Text: text})
		}
		stream(llm.Event{Kind: llm.EventDone, Response: &resp})
	}
	return resp, err
}

func (f *fakeModel) requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

var stepUsage = llm.Usage{InputTokens: 10, OutputTokens: 2}

// say replies with text.
func say(text string) step {
	return func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.AssistantText(text), Usage: stepUsage, StopReason: llm.StopEnd}, nil
	}
}

// callTools replies with tool calls (and no text).
func callTools(calls ...llm.ToolCall) step {
	return func(context.Context, llm.Request) (llm.Response, error) {
		parts := make([]llm.Part, len(calls))
		for i, c := range calls {
			parts[i] = c
		}
		return llm.Response{
			Message:    llm.Message{Role: llm.RoleAssistant, Parts: parts},
			Usage:      stepUsage,
			StopReason: llm.StopToolCalls,
		}, nil
	}
}

func fail(err error) step {
	return func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, err }
}

func tc(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

type echoArgs struct {
	Text  string `json:"text" jsonschema:"text to echo"`
	Times *int   `json:"times" jsonschema:"how many times"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

func echoTool() tool.Tool {
	return tool.New("echo", "Echo the text.", func(_ context.Context, a echoArgs) (any, error) {
		n := 1
		if a.Times != nil {
			n = *a.Times
		}
		out := ""
		for range n {
			out += a.Text
		}
		return echoOut{Echo: out}, nil
	})
}

type noArgs struct{}

func funcTool(name string, fn func(ctx context.Context) (any, error)) tool.Tool {
	return tool.New(name, "Test tool "+name+".", func(ctx context.Context, _ noArgs) (any, error) { return fn(ctx) })
}

// errorShape decodes a failed call's result and checks it is exactly
// {"ok":false,"error":{"message":"…"}}, returning the message.
func errorShape(t *testing.T, content string) string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &top); err != nil {
		t.Fatalf("error result is not a JSON object: %v: %s", err, content)
	}
	if len(top) != 2 || string(top["ok"]) != "false" {
		t.Fatalf("error result shape: want keys ok=false and error only, got %s", content)
	}
	var e map[string]string
	if err := json.Unmarshal(top["error"], &e); err != nil || len(e) != 1 || e["message"] == "" {
		t.Fatalf("error result: want error.message only, got %s", content)
	}
	return e["message"]
}

// toolResults returns the ToolResult parts of msgs, in order.
func toolResults(msgs []llm.Message) []llm.ToolResult {
	var out []llm.ToolResult
	for _, m := range msgs {
		for _, p := range m.Parts {
			if r, ok := p.(llm.ToolResult); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

func userQ() llm.Request {
	return llm.Request{System: "You are a test.", Messages: []llm.Message{llm.UserText("question")}}
}

func mustRun(t *testing.T, m Model, req llm.Request, tools []tool.Tool, opts Options) Result {
	t.Helper()
	res, err := Run(t.Context(), m, req, tools, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func describeMessages(msgs []llm.Message) string {
	s := ""
	for _, m := range msgs {
		s += fmt.Sprintf("%s%v ", m.Role, m.Parts)
	}
	return s
}
