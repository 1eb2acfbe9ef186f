package toolloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

func TestRunWithoutToolCalls(t *testing.T) {
	m := script(say("hello"))
	var streamed []string
	req := userQ()
	res := mustRun(t, m, req, []tool.Tool{echoTool()}, Options{Stream: func(e llm.Event) {
		if e.Kind == llm.EventTextDelta {
			streamed = append(streamed, e.Text)
		}
	}})
	if res.Final.Text() != "hello" || res.Final.Role != llm.RoleAssistant {
		t.Errorf("Final = %+v", res.Final)
	}
	if len(res.Messages) != 1 || res.Messages[0].Text() != "hello" {
		t.Errorf("Messages = %s", describeMessages(res.Messages))
	}
	if res.Rounds != 1 || res.Usage != stepUsage || res.RoundLimitReached || len(res.Calls) != 0 {
		t.Errorf("Rounds=%d Usage=%+v limit=%v calls=%d", res.Rounds, res.Usage, res.RoundLimitReached, len(res.Calls))
	}
	if !slices.Equal(streamed, []string{"hello"}) {
		t.Errorf("stream got %v", streamed)
	}
	reqs := m.requests()
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "echo" || !strings.Contains(string(reqs[0].Tools[0].Parameters), `"text"`) {
		t.Errorf("req.Tools = %+v", reqs[0].Tools)
	}
	if reqs[0].System != req.System || len(reqs[0].Messages) != 1 {
		t.Errorf("request lost the caller's fields: %+v", reqs[0])
	}
	if len(req.Messages) != 1 {
		t.Error("caller's Messages modified")
	}
}

func TestArguments(t *testing.T) {
	tests := []struct {
		name     string
		args     string
		toolName string
		wantOK   string // exact successful content
		wantErr  string // substring of the error message
	}{
		{name: "object", args: `{"text":"hi"}`, wantOK: `{"echo":"hi"}`},
		{name: "optional pointer set", args: `{"text":"ab","times":2}`, wantOK: `{"echo":"abab"}`},
		{name: "double-encoded object", args: `"{\"text\":\"hi\"}"`, wantOK: `{"echo":"hi"}`},
		{name: "double-encoded with spaces", args: `  " {\"text\":\"hi\"} " `, wantOK: `{"echo":"hi"}`},
		{name: "empty arguments are {} (then fail required)", args: ``, wantErr: `missing properties: ["text"]`},
		{name: "null arguments are {} (then fail required)", args: `null`, wantErr: `missing properties: ["text"]`},
		{name: "double-encoded null is a string", args: `"null"`, wantErr: "arguments must be a JSON object, got a string"},
		{name: "plain string", args: `"hi"`, wantErr: "arguments must be a JSON object, got a string"},
		{name: "array", args: `[{"text":"hi"}]`, wantErr: "arguments must be a JSON object, got an array"},
		{name: "number", args: `42`, wantErr: "got a number"},
		{name: "boolean", args: `true`, wantErr: "got a boolean"},
		{name: "malformed JSON", args: `{"text":"hi"`, wantErr: "arguments are not valid JSON"},
		{name: "double-encoded malformed", args: `"{\"text\":"`, wantErr: "got a string"},
		{name: "schema: wrong type", args: `{"text":5}`, wantErr: `property "text": type`},
		{name: "schema: unknown property", args: `{"text":"a","loud":true}`, wantErr: `unexpected additional properties ["loud"]`},
		{name: "schema: fractional integer", args: `{"text":"a","times":1.5}`, wantErr: `property "times"`},
		{name: "unknown tool", toolName: "ech0", args: `{}`, wantErr: `unknown tool "ech0"; available tools: echo, noop`},
	}
	for _, tc0 := range tests {
		t.Run(tc0.name, func(t *testing.T) {
			name := tc0.toolName
			if name == "" {
				name = "echo"
			}
			m := script(callTools(tc("c1", name, tc0.args)), say("done"))
			noop := funcTool("noop", func(context.Context) (any, error) { return "ok", nil })
			res := mustRun(t, m, userQ(), []tool.Tool{echoTool(), noop}, Options{})
			if res.Final.Text() != "done" {
				t.Fatalf("loop did not continue to the final answer: %+v", res.Final)
			}
			results := toolResults(res.Messages)
			if len(results) != 1 || len(res.Calls) != 1 {
				t.Fatalf("want 1 result and 1 call record, got %d, %d", len(results), len(res.Calls))
			}
			r, rec := results[0], res.Calls[0]
			if r.CallID != "c1" || r.Name != name || rec.ID != "c1" || rec.Round != 1 {
				t.Errorf("result ids: %+v / %+v", r, rec)
			}
			if r.Content != rec.Result || r.IsError != rec.IsError {
				t.Errorf("record and message disagree: %+v / %+v", r, rec)
			}
			// The result went back to the model in the second request.
			second := m.requests()[1]
			if got := toolResults(second.Messages); len(got) != 1 || unfenced(t, got[0].Content) != r.Content {
				t.Errorf("second request does not carry the result: %s", describeMessages(second.Messages))
			}
			if tc0.wantErr == "" {
				if r.IsError || r.Content != tc0.wantOK {
					t.Errorf("result = %q (error %v), want %q", r.Content, r.IsError, tc0.wantOK)
				}
				if !json.Valid(rec.Arguments) || rec.Arguments[0] != '{' {
					t.Errorf("record arguments not normalised: %s", rec.Arguments)
				}
				return
			}
			if !r.IsError || rec.Err == nil {
				t.Errorf("IsError=%v Err=%v, want an error", r.IsError, rec.Err)
			}
			if msg := errorShape(t, r.Content); !strings.Contains(msg, tc0.wantErr) {
				t.Errorf("message %q does not contain %q", msg, tc0.wantErr)
			}
		})
	}
}

func TestToolFailures(t *testing.T) {
	errDisk := errors.New("disk full")
	tests := []struct {
		name    string
		fn      func(ctx context.Context) (any, error)
		wantMsg string
		check   func(t *testing.T, rec CallRecord)
	}{
		{
			name:    "handler error",
			fn:      func(context.Context) (any, error) { return nil, errDisk },
			wantMsg: `tool "t" failed: disk full`,
			check: func(t *testing.T, rec CallRecord) {
				if !errors.Is(rec.Err, errDisk) {
					t.Errorf("Err = %v, want the handler's error", rec.Err)
				}
			},
		},
		{
			name:    "handler panic",
			fn:      func(context.Context) (any, error) { panic("index out of range") },
			wantMsg: `tool "t" failed with an internal error (panic: index out of range)`,
			check: func(t *testing.T, rec CallRecord) {
				var pe *PanicError
				if !errors.As(rec.Err, &pe) || pe.Value != "index out of range" || len(pe.Stack) == 0 {
					t.Errorf("Err = %#v, want *PanicError with a stack", rec.Err)
				}
				if strings.Contains(rec.Result, "goroutine") {
					t.Error("the stack leaked into the model's result")
				}
			},
		},
		{
			name: "timeout",
			fn: func(ctx context.Context) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			wantMsg: `tool "t" timed out after 2m0s`,
			check: func(t *testing.T, rec CallRecord) {
				if !errors.Is(rec.Err, context.DeadlineExceeded) {
					t.Errorf("Err = %v, want DeadlineExceeded", rec.Err)
				}
				if rec.Duration != DefaultCallTimeout {
					t.Errorf("Duration = %v, want exactly the timeout under synctest", rec.Duration)
				}
			},
		},
	}
	for _, tc0 := range tests {
		t.Run(tc0.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := script(callTools(tc("c1", "t", `{}`)), say("recovered"))
				var logged []CallRecord
				res := mustRun(t, m, userQ(), []tool.Tool{funcTool("t", tc0.fn)}, Options{
					OnToolResult: func(r CallRecord) { logged = append(logged, r) },
				})
				if res.Final.Text() != "recovered" {
					t.Fatalf("a failed tool ended the turn: %+v", res.Final)
				}
				if len(logged) != 1 || !logged[0].IsError {
					t.Fatalf("OnToolResult got %+v, want one error record", logged)
				}
				rec := res.Calls[0]
				if msg := errorShape(t, rec.Result); msg != tc0.wantMsg {
					t.Errorf("message = %q, want %q", msg, tc0.wantMsg)
				}
				if r := toolResults(res.Messages)[0]; !r.IsError {
					t.Error("ToolResult.IsError not set")
				}
				tc0.check(t, rec)
			})
		})
	}
}

func TestResultTruncated(t *testing.T) {
	long := strings.Repeat("é", 50) // multi-byte: the cap counts characters
	m := script(callTools(tc("c1", "big", `{}`)), say("ok"))
	big := funcTool("big", func(context.Context) (any, error) { return long, nil })
	res := mustRun(t, m, userQ(), []tool.Tool{big}, Options{MaxResultChars: 20})
	got := res.Calls[0].Result
	want := strings.Repeat("é", 20) + "\n[truncated: the result has 50 characters; only the first 20 are shown]"
	if got != want {
		t.Errorf("result = %q, want %q", got, want)
	}

	// Results within the cap are untouched.
	m = script(callTools(tc("c1", "big", `{}`)), say("ok"))
	res = mustRun(t, m, userQ(), []tool.Tool{big}, Options{MaxResultChars: 50})
	if res.Calls[0].Result != long {
		t.Errorf("result within the cap was changed: %q", res.Calls[0].Result)
	}
}

// A result's images (references into the workspace) follow the result in
// its tool message; data a tool put in them is dropped.
func TestResultImages(t *testing.T) {
	m := script(callTools(tc("c1", "shot", `{}`)), say("ok"))
	shot := funcTool("shot", func(context.Context) (any, error) {
		return tool.Result{Content: `{"path":"s.png"}`, Images: []llm.Image{{MediaType: "image/png", Path: "s.png", Data: []byte("x")}}}, nil
	})
	res := mustRun(t, m, userQ(), []tool.Tool{shot}, Options{})
	var msg llm.Message
	for _, mm := range res.Messages {
		if mm.Role == llm.RoleTool {
			msg = mm
		}
	}
	if len(msg.Parts) != 2 {
		t.Fatalf("tool message parts = %#v", msg.Parts)
	}
	img, ok := msg.Parts[1].(llm.Image)
	if !ok || img.Path != "s.png" || img.MediaType != "image/png" || img.Data != nil {
		t.Errorf("image part = %#v", msg.Parts[1])
	}
}

func TestParallelLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const calls, limit = 7, 3
		var active, maxActive atomic.Int32
		started := make(chan struct{}, calls)
		release := make(chan struct{})
		gate := funcTool("gate", func(ctx context.Context) (any, error) {
			n := active.Add(1)
			for {
				old := maxActive.Load()
				if n <= old || maxActive.CompareAndSwap(old, n) {
					break
				}
			}
			started <- struct{}{}
			<-release
			active.Add(-1)
			return "opened", nil
		})
		var issued []llm.ToolCall
		for i := range calls {
			issued = append(issued, tc(string(rune('a'+i)), "gate", `{}`))
		}
		m := script(callTools(issued...), say("all open"))

		var res Result
		var runErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, runErr = Run(t.Context(), m, userQ(), []tool.Tool{gate}, Options{Parallel: limit})
		}()

		synctest.Wait() // everything that can start has started and is blocked
		if got := len(started); got != limit {
			t.Fatalf("%d calls started at once, want exactly %d", got, limit)
		}
		for range calls {
			<-started
			release <- struct{}{}
			synctest.Wait()
			if n := active.Load(); n > limit {
				t.Fatalf("%d calls active, limit %d", n, limit)
			}
		}
		<-done
		if runErr != nil {
			t.Fatal(runErr)
		}
		if got := maxActive.Load(); got != limit {
			t.Errorf("max concurrency observed = %d, want %d", got, limit)
		}
		if len(res.Calls) != calls {
			t.Errorf("%d calls recorded, want %d", len(res.Calls), calls)
		}
	})
}

func TestResultOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "c": make(chan struct{})}
		type waitArgs struct {
			Key string `json:"key"`
		}
		wait := tool.New("wait", "Wait for a key.", func(ctx context.Context, a waitArgs) (any, error) {
			<-release[a.Key]
			return "released " + a.Key, nil
		})
		m := script(callTools(
			tc("id-a", "wait", `{"key":"a"}`),
			tc("id-b", "wait", `{"key":"b"}`),
			tc("id-c", "wait", `{"key":"c"}`),
		), say("ok"))
		var announced, completed []string
		var res Result
		done := make(chan struct{})
		go func() {
			defer close(done)
			res = mustRun(t, m, userQ(), []tool.Tool{wait}, Options{
				OnToolCall:   func(c Call) { announced = append(announced, c.ID) },
				OnToolResult: func(r CallRecord) { completed = append(completed, r.ID) },
			})
		}()
		for _, k := range []string{"c", "b", "a"} {
			synctest.Wait()
			close(release[k])
		}
		<-done
		if !slices.Equal(announced, []string{"id-a", "id-b", "id-c"}) {
			t.Errorf("OnToolCall order = %v, want issue order", announced)
		}
		if !slices.Equal(completed, []string{"id-c", "id-b", "id-a"}) {
			t.Errorf("OnToolResult order = %v, want completion order", completed)
		}
		var ids, contents []string
		for _, r := range toolResults(res.Messages) {
			ids = append(ids, r.CallID)
			contents = append(contents, r.Content)
		}
		if !slices.Equal(ids, []string{"id-a", "id-b", "id-c"}) {
			t.Errorf("results appended in order %v, want issue order", ids)
		}
		if !slices.Equal(contents, []string{"released a", "released b", "released c"}) {
			t.Errorf("contents = %v", contents)
		}
		for i, msg := range res.Messages[1:4] {
			if msg.Role != llm.RoleTool || len(msg.Parts) != 1 {
				t.Errorf("message %d: want one tool message per result, got %s", i+1, describeMessages([]llm.Message{msg}))
			}
		}
	})
}

func TestRoundLimit(t *testing.T) {
	again := callTools(tc("", "echo", `{"text":"x"}`))
	strayCall := func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
			llm.Text{Text: "best effort"}, tc("z", "echo", `{"text":"y"}`),
		}}, Usage: stepUsage}, nil
	}
	m := script(again, again, again, strayCall)
	var rounds [][]llm.Message
	res := mustRun(t, m, userQ(), []tool.Tool{echoTool()}, Options{
		MaxRounds: 3,
		OnRound:   func(app []llm.Message) { rounds = append(rounds, app) },
	})
	if !res.RoundLimitReached {
		t.Error("RoundLimitReached not set")
	}
	if res.Rounds != 4 || len(res.Calls) != 3 {
		t.Errorf("Rounds=%d calls=%d, want 4 model calls and 3 tool calls", res.Rounds, len(res.Calls))
	}
	if want := (llm.Usage{InputTokens: 40, OutputTokens: 8}); res.Usage != want {
		t.Errorf("Usage = %+v, want %+v (summed)", res.Usage, want)
	}
	if res.Final.Text() != "best effort" || len(res.Final.ToolCalls()) != 0 {
		t.Errorf("Final = %+v, want the text without the stray tool call", res.Final)
	}
	if len(res.Messages) != 7 { // 3 × (assistant + result) + final
		t.Errorf("Messages: %s", describeMessages(res.Messages))
	}
	if len(rounds) != 4 || len(rounds[0]) != 2 || len(rounds[3]) != 1 {
		t.Errorf("OnRound calls: %d", len(rounds))
	}
	for i, c := range res.Calls {
		if c.ID == "" || c.Round != i+1 {
			t.Errorf("call %d: ID=%q Round=%d (missing IDs must be assigned)", i, c.ID, c.Round)
		}
	}
	reqs := m.requests()
	last := reqs[3]
	if last.ToolChoice != llm.ToolChoiceNone {
		t.Errorf("final call ToolChoice = %q, want none", last.ToolChoice)
	}
	if !strings.Contains(lastUserText(last.Messages), "You have used all 3 rounds") {
		t.Errorf("final call lacks the limit note: %s", describeMessages(last.Messages))
	}
	for i, r := range reqs[:3] {
		if r.ToolChoice != llm.ToolChoiceAuto || len(r.Tools) != 1 {
			t.Errorf("round %d: ToolChoice=%q tools=%d", i+1, r.ToolChoice, len(r.Tools))
		}
	}
	for _, m := range res.Messages {
		if m.Role == llm.RoleUser {
			t.Error("the limit note leaked into Result.Messages")
		}
	}
}

var routeFormat = &llm.ResponseFormat{
	Name:   "route",
	Strict: true,
	Schema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"route": {"type": "string", "enum": ["answer", "search"]},
			"confidence": {"type": "number"}
		},
		"required": ["route", "confidence"],
		"additionalProperties": false
	}`),
}

func TestStructuredOutput(t *testing.T) {
	const valid = `{"route":"search","confidence":0.8}`
	tests := []struct {
		name       string
		tools      bool
		steps      []step
		wantErr    error
		wantFinal  string
		wantCalls  int // model calls
		checkReqs  func(t *testing.T, reqs []llm.Request)
		wantMsgLen int
	}{
		{
			name:       "pass after tool rounds",
			tools:      true,
			steps:      []step{callTools(tc("c1", "echo", `{"text":"x"}`)), say("I think we should search."), say("```json\n" + valid + "\n```")},
			wantFinal:  valid,
			wantCalls:  3,
			wantMsgLen: 3, // assistant with call, its result, formatted final (the draft is dropped)
			checkReqs: func(t *testing.T, reqs []llm.Request) {
				for i, r := range reqs[:2] {
					if r.ResponseFormat != nil || len(r.Tools) != 1 || r.ToolChoice != llm.ToolChoiceAuto {
						t.Errorf("tool round %d: ResponseFormat=%v tools=%d choice=%q", i+1, r.ResponseFormat, len(r.Tools), r.ToolChoice)
					}
				}
				f := reqs[2]
				if f.ResponseFormat != routeFormat || f.ToolChoice != llm.ToolChoiceNone {
					t.Errorf("format pass: ResponseFormat=%v choice=%q", f.ResponseFormat, f.ToolChoice)
				}
				n := len(f.Messages)
				if f.Messages[n-2].Text() != "I think we should search." || !strings.Contains(f.Messages[n-1].Text(), "single JSON value") {
					t.Errorf("format pass messages: %s", describeMessages(f.Messages))
				}
			},
		},
		{
			name:       "retry after invalid output",
			tools:      true,
			steps:      []step{say("draft"), say(`{"route":"maybe","confidence":1}`), say(valid)},
			wantFinal:  valid,
			wantCalls:  3,
			wantMsgLen: 1,
			checkReqs: func(t *testing.T, reqs []llm.Request) {
				r := reqs[2]
				n := len(r.Messages)
				if r.Messages[n-2].Text() != `{"route":"maybe","confidence":1}` {
					t.Errorf("retry does not show the invalid reply: %s", describeMessages(r.Messages))
				}
				if note := r.Messages[n-1].Text(); !strings.Contains(note, "enum") || !strings.Contains(note, "/properties/route") {
					t.Errorf("retry note lacks the validation error: %q", note)
				}
				if r.ResponseFormat != routeFormat {
					t.Error("retry without ResponseFormat")
				}
			},
		},
		{
			name:      "second failure is ErrStructuredOutput",
			tools:     true,
			steps:     []step{say("draft"), say("not json"), say(`{"route":"answer"}`)},
			wantErr:   ErrStructuredOutput,
			wantFinal: `{"route":"answer"}`,
			wantCalls: 3,
		},
		{
			name:       "no tools: the first call is the format call",
			steps:      []step{say(valid)},
			wantFinal:  valid,
			wantCalls:  1,
			wantMsgLen: 1,
			checkReqs: func(t *testing.T, reqs []llm.Request) {
				if reqs[0].ResponseFormat != routeFormat || len(reqs[0].Messages) != 1 {
					t.Errorf("request = %+v", reqs[0])
				}
			},
		},
	}
	for _, tc0 := range tests {
		t.Run(tc0.name, func(t *testing.T) {
			m := script(tc0.steps...)
			req := userQ()
			req.ResponseFormat = routeFormat
			var tools []tool.Tool
			if tc0.tools {
				tools = []tool.Tool{echoTool()}
			}
			res, err := Run(t.Context(), m, req, tools, Options{})
			if !errors.Is(err, tc0.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc0.wantErr)
			}
			if res.Final.Text() != tc0.wantFinal {
				t.Errorf("Final = %q, want %q", res.Final.Text(), tc0.wantFinal)
			}
			if res.Rounds != tc0.wantCalls || len(m.requests()) != tc0.wantCalls {
				t.Errorf("model calls = %d (Rounds %d), want %d", len(m.requests()), res.Rounds, tc0.wantCalls)
			}
			if tc0.wantErr == nil {
				if len(res.Messages) != tc0.wantMsgLen || res.Messages[len(res.Messages)-1].Text() != tc0.wantFinal {
					t.Errorf("Messages: %s", describeMessages(res.Messages))
				}
			}
			if tc0.checkReqs != nil {
				tc0.checkReqs(t, m.requests())
			}
		})
	}
}

func TestStructuredOutputAtRoundLimit(t *testing.T) {
	m := script(callTools(tc("c1", "echo", `{"text":"x"}`)), say(`{"route":"answer","confidence":0.5}`))
	req := userQ()
	req.ResponseFormat = routeFormat
	res := mustRun(t, m, req, []tool.Tool{echoTool()}, Options{MaxRounds: 1})
	if !res.RoundLimitReached || res.Final.Text() != `{"route":"answer","confidence":0.5}` {
		t.Errorf("limit=%v Final=%q", res.RoundLimitReached, res.Final.Text())
	}
	last := m.requests()[1]
	note := lastUserText(last.Messages)
	if last.ResponseFormat != routeFormat || !strings.Contains(note, "rounds") || !strings.Contains(note, "JSON") {
		t.Errorf("final call: ResponseFormat=%v note=%q", last.ResponseFormat, note)
	}
}

func TestRunRejectsBadSetup(t *testing.T) {
	tests := []struct {
		name  string
		tools []tool.Tool
		rf    *llm.ResponseFormat
		want  string
	}{
		{"duplicate tool names", []tool.Tool{echoTool(), echoTool()}, nil, `duplicate tool name "echo"`},
		{"nil tool", []tool.Tool{nil}, nil, "nil tool"},
		{"broken response schema", nil, &llm.ResponseFormat{Name: "x", Schema: json.RawMessage(`{"type":`)}, `response format "x"`},
	}
	for _, tc0 := range tests {
		t.Run(tc0.name, func(t *testing.T) {
			m := script(say("never"))
			req := userQ()
			req.ResponseFormat = tc0.rf
			_, err := Run(t.Context(), m, req, tc0.tools, Options{})
			if err == nil || !strings.Contains(err.Error(), tc0.want) {
				t.Fatalf("err = %v, want containing %q", err, tc0.want)
			}
			if n := len(m.requests()); n != 0 {
				t.Errorf("model called %d times before the setup error", n)
			}
		})
	}
}

func TestProviderError(t *testing.T) {
	errRate := errors.New("429 rate limited")
	m := script(callTools(tc("c1", "echo", `{"text":"x"}`)), fail(errRate))
	res, err := Run(t.Context(), m, userQ(), []tool.Tool{echoTool()}, Options{})
	if !errors.Is(err, errRate) {
		t.Fatalf("err = %v, want wrapping the provider error", err)
	}
	if len(res.Messages) != 2 || len(res.Calls) != 1 || res.Usage != stepUsage || res.Rounds != 2 {
		t.Errorf("partial result: messages=%d calls=%d usage=%+v rounds=%d", len(res.Messages), len(res.Calls), res.Usage, res.Rounds)
	}
}

func TestCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var ran atomic.Int32
		stopper := funcTool("stopper", func(ctx context.Context) (any, error) {
			ran.Add(1)
			cancel() // the user stops the turn while this tool runs
			<-ctx.Done()
			return nil, ctx.Err()
		})
		m := script(callTools(tc("c1", "stopper", `{}`), tc("c2", "stopper", `{}`)), say("never reached"))
		res, err := Run(ctx, m, userQ(), []tool.Tool{stopper}, Options{Parallel: 1})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if ran.Load() != 1 {
			t.Errorf("%d tool calls ran, want 1 (queued calls must not start)", ran.Load())
		}
		if n := len(m.requests()); n != 1 {
			t.Errorf("model called %d times after cancellation", n)
		}
		results := toolResults(res.Messages)
		if len(results) != 2 {
			t.Fatalf("every issued call must be answered, got %d results", len(results))
		}
		if msg := errorShape(t, results[0].Content); !strings.Contains(msg, "cancelled") {
			t.Errorf("running call result = %q", msg)
		}
		if msg := errorShape(t, results[1].Content); !strings.Contains(msg, "not run") {
			t.Errorf("queued call result = %q", msg)
		}
	})
}

func TestToolChoice(t *testing.T) {
	t.Run("required applies to the first round only", func(t *testing.T) {
		m := script(callTools(tc("c1", "echo", `{"text":"x"}`)), say("ok"))
		req := userQ()
		req.ToolChoice = llm.ToolChoiceRequired
		mustRun(t, m, req, []tool.Tool{echoTool()}, Options{})
		reqs := m.requests()
		if reqs[0].ToolChoice != llm.ToolChoiceRequired || reqs[1].ToolChoice != llm.ToolChoiceAuto {
			t.Errorf("choices = %q, %q", reqs[0].ToolChoice, reqs[1].ToolChoice)
		}
	})
	t.Run("none disables tools", func(t *testing.T) {
		m := script(callTools(tc("c1", "echo", `{"text":"x"}`)))
		req := userQ()
		req.ToolChoice = llm.ToolChoiceNone
		res := mustRun(t, m, req, []tool.Tool{echoTool()}, Options{})
		if len(res.Calls) != 0 || res.Rounds != 1 || len(res.Final.ToolCalls()) != 0 {
			t.Errorf("tools ran with ToolChoiceNone: calls=%d rounds=%d", len(res.Calls), res.Rounds)
		}
	})
	t.Run("no tools sends no tool choice", func(t *testing.T) {
		m := script(say("ok"))
		mustRun(t, m, userQ(), nil, Options{})
		if r := m.requests()[0]; r.Tools != nil || r.ToolChoice != llm.ToolChoiceAuto {
			t.Errorf("tools=%v choice=%q", r.Tools, r.ToolChoice)
		}
	})
}

func TestCallbacksAndMessages(t *testing.T) {
	m := script(
		callTools(tc("c1", "echo", `{"text":"a"}`), tc("c2", "nope", `{}`)),
		callTools(tc("c3", "echo", `"{\"text\":\"b\"}"`)),
		say("fin"),
	)
	var calls []Call
	var saved [][]llm.Message
	res := mustRun(t, m, userQ(), []tool.Tool{echoTool()}, Options{
		OnToolCall: func(c Call) { calls = append(calls, c) },
		OnRound:    func(app []llm.Message) { saved = append(saved, slices.Clone(app)) },
	})
	if len(calls) != 3 || calls[1].Name != "nope" || calls[2].Round != 2 || string(calls[2].Arguments) != `"{\"text\":\"b\"}"` {
		t.Errorf("OnToolCall got %+v", calls)
	}
	if string(res.Calls[2].Arguments) != `{"text":"b"}` {
		t.Errorf("record arguments = %s, want the decoded object", res.Calls[2].Arguments)
	}
	var flat []llm.Message
	for _, s := range saved {
		flat = append(flat, s...)
	}
	if len(saved) != 3 || len(flat) != len(res.Messages) {
		t.Fatalf("OnRound: %d rounds, %d messages; Result has %d", len(saved), len(flat), len(res.Messages))
	}
	for i := range flat {
		if flat[i].Role != res.Messages[i].Role || len(flat[i].Parts) != len(res.Messages[i].Parts) {
			t.Errorf("OnRound message %d differs from Result.Messages", i)
		}
	}
	// Each request carries the full history so far.
	reqs := m.requests()
	if len(reqs[1].Messages) != 1+3 || len(reqs[2].Messages) != 1+3+2 {
		t.Errorf("history lengths %d, %d", len(reqs[1].Messages), len(reqs[2].Messages))
	}
}

func TestRunConcurrentUse(t *testing.T) {
	// Tools and the model may be shared by concurrent runs (race detector).
	tools := []tool.Tool{echoTool()}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			m := script(callTools(tc("c1", "echo", `{"text":"x"}`), tc("c2", "echo", `{"text":"y"}`)), say("ok"))
			if _, err := Run(t.Context(), m, userQ(), tools, Options{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestCapContent(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"bytes over, characters within", "ééé", 3, "ééé"},
		{"cut", "abcdef", 4, "abcd\n[truncated: the result has 6 characters; only the first 4 are shown]"},
	}
	for _, tc0 := range tests {
		t.Run(tc0.name, func(t *testing.T) {
			if got := capContent(tc0.in, tc0.limit); got != tc0.want {
				t.Errorf("capContent = %q, want %q", got, tc0.want)
			}
		})
	}
}

func TestErrorContentEscaping(t *testing.T) {
	got := errorContent(`bad "quote" <tag> & newline`+"\n", 100)
	if got != `{"ok":false,"error":{"message":"bad \"quote\" <tag> & newline\n"}}` {
		t.Errorf("errorContent = %s", got)
	}
	errorShape(t, got)
}

// TestRepeatedCallsAreStopped: the same call (same tool, same arguments in
// any spacing) runs MaxRepeats times in a turn; a further one is not run and
// its result says why, and a round of nothing but repeats ends the tool
// rounds with an answer asked for with tools off. A different call still
// runs.
func TestRepeatedCallsAreStopped(t *testing.T) {
	same := callTools(tc("", "echo", `{"text":"x"}`))
	spaced := callTools(tc("", "echo", `{ "text" : "x" }`))
	mixed := callTools(tc("", "echo", `{"text":"x"}`), tc("", "echo", `{"text":"new"}`))
	m := script(same, spaced, mixed, same, say("I have what I need."))
	var results []CallRecord
	res := mustRun(t, m, userQ(), []tool.Tool{echoTool()}, Options{
		MaxRepeats:   2,
		OnToolResult: func(r CallRecord) { results = append(results, r) },
	})
	if res.Final.Text() != "I have what I need." || res.RoundLimitReached {
		t.Fatalf("Final = %+v, limit %v", res.Final, res.RoundLimitReached)
	}
	if res.RepeatsStopped != 2 || len(res.Calls) != 5 {
		t.Fatalf("RepeatsStopped = %d, calls = %d; want 2 of 5", res.RepeatsStopped, len(res.Calls))
	}
	var ran []string
	for _, c := range res.Calls {
		if c.IsError {
			if !strings.Contains(c.Result, "not run: echo with these same arguments already ran 2 times") {
				t.Errorf("stopped call's result = %s", c.Result)
			}
			continue
		}
		ran = append(ran, string(c.Arguments))
	}
	if want := []string{`{"text":"x"}`, `{ "text" : "x" }`, `{"text":"new"}`}; !slices.Equal(ran, want) {
		t.Errorf("calls run = %q, want %q", ran, want)
	}
	if len(results) != 5 || !results[2].IsError {
		t.Errorf("OnToolResult saw %d results (third failed: %v)", len(results), len(results) > 2 && results[2].IsError)
	}
	reqs := m.requests()
	last := reqs[len(reqs)-1]
	if len(reqs) != 5 || last.ToolChoice != llm.ToolChoiceNone || !strings.Contains(lastUserText(last.Messages), "You repeated tool calls") {
		t.Errorf("%d model calls; the last: choice %q, %s", len(reqs), last.ToolChoice, describeMessages(last.Messages))
	}

	t.Run("no limit", func(t *testing.T) {
		m := script(same, same, same, same, say("done"))
		res := mustRun(t, m, userQ(), []tool.Tool{echoTool()}, Options{MaxRepeats: -1})
		if res.RepeatsStopped != 0 || len(res.Calls) != 4 {
			t.Errorf("RepeatsStopped = %d, calls = %d", res.RepeatsStopped, len(res.Calls))
		}
	})
}

// sharedModel answers with text and keeps the requests as sent (not
// cloned), so a test can see whether a request shares the caller's slice.
type sharedModel struct{ reqs []llm.Request }

func (m *sharedModel) Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	m.reqs = append(m.reqs, req)
	return llm.Response{Message: llm.AssistantText("done"), StopReason: llm.StopEnd}, nil
}

// A run whose first answer is final costs nothing per message of the
// history it was given: the request is the caller's slice and the answer
// is not appended to a copy of it (a turn on a long thread would copy its
// whole history for one message).
func TestFinalAnswerDoesNotCopyTheHistory(t *testing.T) {
	history := func(n int) llm.Request {
		req := llm.Request{Messages: make([]llm.Message, n)}
		for i := range req.Messages {
			req.Messages[i] = llm.UserText("message")
		}
		return req
	}
	tools := []tool.Tool{echoTool()}
	allocated := func(req llm.Request) (uint64, *sharedModel) {
		m := &sharedModel{}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := mustRun(t, m, req, tools, Options{})
		runtime.ReadMemStats(&after)
		if len(res.Messages) != 1 || res.Messages[0].Text() != "done" {
			t.Errorf("Messages = %s", describeMessages(res.Messages))
		}
		return after.TotalAlloc - before.TotalAlloc, m
	}
	const n = 10_000
	short, long := history(1), history(n)
	allocated(short) // the tool's schema and the like are made once
	base, _ := allocated(short)
	got, m := allocated(long)
	if len(m.reqs) != 1 || len(m.reqs[0].Messages) != n || &m.reqs[0].Messages[0] != &long.Messages[0] {
		t.Fatalf("the request does not carry the caller's messages as they are")
	}
	// A copy of the history would be n × 40 bytes.
	if got > base+n*40/4 {
		t.Errorf("Run allocated %d bytes over %d messages, %d over one", got, n, base)
	}
}

// Later rounds send the history, then every message the run added, in
// order, however the join of the two is extended.
func TestRoundsSendTheWholeConversation(t *testing.T) {
	m := script(
		callTools(tc("c1", "echo", `{"text":"a"}`)),
		callTools(tc("c2", "echo", `{"text":"b"}`), tc("c3", "echo", `{"text":"c"}`)),
		callTools(tc("c4", "echo", `{"text":"d"}`)),
		say("fin"),
	)
	req := userQ()
	req.Messages = append(req.Messages, llm.AssistantText("earlier answer"), llm.UserText("next question"))
	res := mustRun(t, m, req, []tool.Tool{echoTool()}, Options{})
	reqs := m.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	all := append(slices.Clone(req.Messages), res.Messages...)
	for i, r := range reqs {
		want := all[:len(r.Messages)]
		if got, w := describeMessages(storedForm(r.Messages)), describeMessages(want); got != w {
			t.Errorf("request %d:\n got %s\nwant %s", i, got, w)
		}
	}
	if len(reqs[1].Messages) != 3+2 || len(reqs[2].Messages) != 3+2+3 || len(reqs[3].Messages) != 3+2+3+2 {
		t.Errorf("history lengths %d, %d, %d", len(reqs[1].Messages), len(reqs[2].Messages), len(reqs[3].Messages))
	}
	if len(req.Messages) != 3 || req.Messages[2].Text() != "next question" {
		t.Error("caller's Messages modified")
	}
}

// storedForm returns msgs with their tool results as stored, not fenced.
func storedForm(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		m.Parts = slices.Clone(m.Parts)
		for j, p := range m.Parts {
			if r, ok := p.(llm.ToolResult); ok {
				r.Content, _ = Unfence(r.Content)
				m.Parts[j] = r
			}
		}
		out[i] = m
	}
	return out
}

// A tool declaring a longer call timeout (an agent running a session of
// its own) gets it; a shorter one does not shorten the loop's limit.
func TestToolCallTimeoutOfTheTool(t *testing.T) {
	cases := []struct {
		name string
		own  time.Duration
		want time.Duration
	}{
		{"longer than the loop's", 10 * time.Minute, 10 * time.Minute},
		{"shorter than the loop's", time.Second, DefaultCallTimeout},
		{"none", 0, DefaultCallTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := tool.New("slow", "Waits.", func(ctx context.Context, _ noArgs) (any, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				}, tool.WithCallTimeout(c.own))
				res := mustRun(t, script(callTools(tc("c1", "slow", `{}`)), say("done")), userQ(), []tool.Tool{slow}, Options{})
				if got := res.Calls[0].Duration; got != c.want {
					t.Errorf("the call ran %v, want %v", got, c.want)
				}
				if msg := errorShape(t, res.Calls[0].Result); msg != fmt.Sprintf(`tool "slow" timed out after %s`, c.want) {
					t.Errorf("message = %q", msg)
				}
			})
		})
	}
}
