package anthropic_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/providers/anthropic"
	"github.com/reverie-ai/reverie/internal/providers/providerstest"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

func newClient(t *testing.T, srv *llmtest.AnthropicServer, mod func(*anthropic.Options)) (*anthropic.Client, *providerstest.Clock) {
	t.Helper()
	clock := providerstest.NewClock()
	o := anthropic.Options{
		Name:       "claude",
		BaseURL:    srv.URL(),
		APIKey:     "sk-ant-test",
		Model:      "claude-test",
		HTTPClient: srv.Client(),
		Clock:      clock,
		Jitter:     func() float64 { return 0 },
	}
	if mod != nil {
		mod(&o)
	}
	c, err := anthropic.New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, clock
}

func hello() llm.Request { return llm.Request{Messages: []llm.Message{llm.UserText("hello")}} }

type streamed struct{ events []llm.Event }

func (s *streamed) fn(ev llm.Event) { s.events = append(s.events, ev) }

func (s *streamed) count(kind llm.EventKind) int {
	n := 0
	for _, ev := range s.events {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func (s *streamed) check(t *testing.T, resp llm.Response) {
	t.Helper()
	var text strings.Builder
	args, ids, names := map[int]string{}, map[int]string{}, map[int]string{}
	var done *llm.Response
	for i, ev := range s.events {
		if done != nil {
			t.Fatalf("event %d (%s) after done", i, ev.Kind)
		}
		switch ev.Kind {
		case llm.EventTextDelta:
			text.WriteString(ev.Text)
		case llm.EventToolCallDelta:
			args[ev.ToolCall.Index] += ev.ToolCall.ArgumentsDelta
			if ev.ToolCall.ID != "" {
				ids[ev.ToolCall.Index] = ev.ToolCall.ID
			}
			if ev.ToolCall.Name != "" {
				names[ev.ToolCall.Index] = ev.ToolCall.Name
			}
		case llm.EventDone:
			done = ev.Response
		}
	}
	if done == nil || !reflect.DeepEqual(*done, resp) {
		t.Fatalf("done event = %+v, want the returned %+v", done, resp)
	}
	if text.String() != resp.Message.Text() {
		t.Errorf("text deltas = %q, response text %q", text.String(), resp.Message.Text())
	}
	for i, c := range resp.Message.ToolCalls() {
		if args[i] != string(c.Arguments) || ids[i] != c.ID || names[i] != c.Name {
			t.Errorf("tool call %d from deltas = (%q %q %q), response has (%q %q %q)", i, ids[i], names[i], args[i], c.ID, c.Name, c.Arguments)
		}
	}
}

func TestGenerate(t *testing.T) {
	weather := llm.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris","unit":"celsius","days":3}`)}
	clockStart := providerstest.NewClock().Now()
	usage := llm.Usage{InputTokens: 40, OutputTokens: 7, CacheReadTokens: 30}
	tests := []struct {
		name       string
		replies    []llmtest.ServerReply
		stream     bool
		wantText   string
		wantCalls  []llm.ToolCall
		wantUsage  llm.Usage
		wantStop   llm.StopReason
		wantErr    error
		wantStatus int
		wantSleeps []time.Duration
		wantReqs   int
		minDeltas  int
	}{
		{
			name:     "text reply",
			replies:  []llmtest.ServerReply{{Text: "Hello there, friend.", Usage: usage}},
			wantText: "Hello there, friend.", wantUsage: usage, wantStop: llm.StopEnd, wantReqs: 1,
		},
		{
			name:     "text reply streamed",
			replies:  []llmtest.ServerReply{{Text: "Hello there, friend.", Chunks: 4, Usage: usage}},
			stream:   true,
			wantText: "Hello there, friend.", wantUsage: usage, wantStop: llm.StopEnd, wantReqs: 1,
		},
		{
			name:      "tool call",
			replies:   []llmtest.ServerReply{{Text: "Checking.", ToolCalls: []llm.ToolCall{weather}, Usage: usage}},
			wantText:  "Checking.",
			wantCalls: []llm.ToolCall{{ID: "toolu_1_1", Name: weather.Name, Arguments: weather.Arguments}},
			wantUsage: usage, wantStop: llm.StopToolCalls, wantReqs: 1,
		},
		{
			name:      "tool call input split over six chunks",
			replies:   []llmtest.ServerReply{{Text: "Checking.", ToolCalls: []llm.ToolCall{weather}, Chunks: 6, Usage: usage}},
			stream:    true,
			wantText:  "Checking.",
			wantCalls: []llm.ToolCall{{ID: "toolu_1_1", Name: weather.Name, Arguments: weather.Arguments}},
			wantUsage: usage, wantStop: llm.StopToolCalls, wantReqs: 1, minDeltas: 7,
		},
		{
			name: "two tool calls streamed",
			replies: []llmtest.ServerReply{{Chunks: 5, ToolCalls: []llm.ToolCall{
				weather, {Name: "get_time", Arguments: json.RawMessage(`{"zone":"Europe/Paris"}`)},
			}}},
			stream: true,
			wantCalls: []llm.ToolCall{
				{ID: "toolu_1_1", Name: "get_weather", Arguments: weather.Arguments},
				{ID: "toolu_1_2", Name: "get_time", Arguments: json.RawMessage(`{"zone":"Europe/Paris"}`)},
			},
			wantStop: llm.StopToolCalls, wantReqs: 1, minDeltas: 12,
		},
		{
			name:     "max tokens stop",
			replies:  []llmtest.ServerReply{{Text: "cut", StopReason: "max_tokens"}},
			stream:   true,
			wantText: "cut", wantStop: llm.StopMaxTokens, wantReqs: 1,
		},
		{
			name:     "429 with retry-after then success",
			replies:  []llmtest.ServerReply{{Status: http.StatusTooManyRequests, RetryAfter: "3"}, {Text: "ok"}},
			wantText: "ok", wantStop: llm.StopEnd, wantReqs: 2,
			wantSleeps: []time.Duration{3 * time.Second},
		},
		{
			name: "429 with retry-after date then success streamed",
			replies: []llmtest.ServerReply{
				{Status: http.StatusTooManyRequests, RetryAfter: clockStart.Add(9 * time.Second).Format(http.TimeFormat)},
				{Text: "ok"},
			},
			stream:   true,
			wantText: "ok", wantStop: llm.StopEnd, wantReqs: 2,
			wantSleeps: []time.Duration{9 * time.Second},
		},
		{
			name:     "overloaded 529 then success",
			replies:  []llmtest.ServerReply{{Status: 529}, {Text: "recovered"}},
			wantText: "recovered", wantStop: llm.StopEnd, wantReqs: 2,
			wantSleeps: []time.Duration{250 * time.Millisecond},
		},
		{
			name:     "500 then success streamed",
			replies:  []llmtest.ServerReply{{Status: 500}, {Text: "recovered"}},
			stream:   true,
			wantText: "recovered", wantStop: llm.StopEnd, wantReqs: 2,
			wantSleeps: []time.Duration{250 * time.Millisecond},
		},
		{
			name:       "overloaded exhausted",
			replies:    []llmtest.ServerReply{{Status: 529}, {Status: 529}, {Status: 500}, {Status: 529}},
			wantErr:    providers.ErrUnavailable,
			wantStatus: 529, wantReqs: 4,
			wantSleeps: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second},
		},
		{
			name:       "401 is not retried",
			replies:    []llmtest.ServerReply{{Status: http.StatusUnauthorized}},
			wantErr:    providers.ErrAuth,
			wantStatus: 401, wantReqs: 1,
		},
		{
			name:       "404 unknown model",
			replies:    []llmtest.ServerReply{{Status: http.StatusNotFound}},
			stream:     true,
			wantErr:    providers.ErrNotFound,
			wantStatus: 404, wantReqs: 1,
		},
		{
			name:       "400 prompt too long",
			replies:    []llmtest.ServerReply{{Status: http.StatusBadRequest, ErrorMessage: "prompt is too long: 210000 tokens > 200000 maximum"}},
			wantErr:    providers.ErrBadRequest,
			wantStatus: 400, wantReqs: 1,
		},
		{
			name:    "stream cut by a dropped connection",
			replies: []llmtest.ServerReply{{Text: "this will not finish", Chunks: 5, CutAfter: 4}},
			stream:  true,
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantReqs: 1,
		},
		{
			name:    "stream ended without message_stop",
			replies: []llmtest.ServerReply{{Text: "this will not finish", Chunks: 5, CutAfter: 4, CleanCut: true}},
			stream:  true,
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantReqs: 1,
		},
		{
			name:     "overloaded error event before any delta is retried",
			replies:  []llmtest.ServerReply{{StreamError: "overloaded_error", CutAfter: 1}, {Text: "recovered"}},
			stream:   true,
			wantText: "recovered", wantStop: llm.StopEnd, wantReqs: 2,
			wantSleeps: []time.Duration{250 * time.Millisecond},
		},
		{
			name:       "overloaded error event after deltas",
			replies:    []llmtest.ServerReply{{Text: "partial text here", Chunks: 4, StreamError: "overloaded_error", CutAfter: 5}, {Text: "unused"}},
			stream:     true,
			wantErr:    providers.ErrUnavailable,
			wantStatus: 200, wantReqs: 1,
		},
		{
			name:    "garbage body",
			replies: []llmtest.ServerReply{{Garbage: true}},
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantReqs: 1,
		},
		{
			name:    "garbage stream",
			replies: []llmtest.ServerReply{{Garbage: true}},
			stream:  true,
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantReqs: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(t)
			srv.Enqueue(tc.replies...)
			c, clock := newClient(t, srv, nil)
			var st streamed
			var fn llm.StreamFunc
			if tc.stream {
				fn = st.fn
			}
			resp, err := c.Generate(context.Background(), hello(), fn)
			if got := len(srv.MessageRequests()); got != tc.wantReqs {
				t.Errorf("server saw %d requests, want %d", got, tc.wantReqs)
			}
			if got := clock.Sleeps(); !reflect.DeepEqual(got, tc.wantSleeps) && (len(got) > 0 || len(tc.wantSleeps) > 0) {
				t.Errorf("slept %v, want %v", got, tc.wantSleeps)
			}
			if tc.wantErr != nil {
				var pe *providers.Error
				if !errors.As(err, &pe) || !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v (%T), want a *providers.Error matching %v", err, err, tc.wantErr)
				}
				if pe.Provider != "claude" || pe.Model != "claude-test" || pe.Status != tc.wantStatus {
					t.Errorf("error fields = (%q, %q, %d), want (claude, claude-test, %d)", pe.Provider, pe.Model, pe.Status, tc.wantStatus)
				}
				return
			}
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if got := resp.Message.Text(); got != tc.wantText {
				t.Errorf("text = %q, want %q", got, tc.wantText)
			}
			if got := resp.Message.ToolCalls(); !reflect.DeepEqual(got, tc.wantCalls) {
				t.Errorf("tool calls = %+v, want %+v", got, tc.wantCalls)
			}
			if resp.Usage != tc.wantUsage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tc.wantUsage)
			}
			if resp.StopReason != tc.wantStop || resp.Model != "claude-test" {
				t.Errorf("stop = %q model %q, want %q claude-test", resp.StopReason, resp.Model, tc.wantStop)
			}
			if tc.stream {
				st.check(t, resp)
				if tc.wantText != "" && st.count(llm.EventTextDelta) < 2 {
					t.Errorf("got %d text deltas, want several", st.count(llm.EventTextDelta))
				}
				if n := st.count(llm.EventToolCallDelta); n < tc.minDeltas {
					t.Errorf("got %d tool-call deltas, want at least %d", n, tc.minDeltas)
				}
				if st.count(llm.EventUsage) != 1 {
					t.Errorf("got %d usage events, want 1", st.count(llm.EventUsage))
				}
			}
		})
	}
}

func TestRequestMapping(t *testing.T) {
	temp := 0.3
	req := llm.Request{
		System: "You are Reverie.",
		Messages: []llm.Message{
			llm.SystemText("Today is Monday."),
			llm.UserText("What is the weather in Paris?"),
			llm.UserText("And the time?"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				llm.Text{Text: "Let me check."},
				llm.ToolCall{ID: "toolu_a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				llm.ToolCall{ID: "toolu_b", Name: "get_time", Arguments: json.RawMessage(`"not an object"`)},
			}},
			{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "toolu_a", Name: "get_weather", Content: `{"ok":true,"temp":21}`}}},
			{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "toolu_b", Name: "get_time", Content: `{"ok":false}`, IsError: true}}},
			llm.UserText("Thanks."),
		},
		Tools: []llm.ToolSpec{
			{Name: "get_weather", Description: "Weather for a city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
			{Name: "get_time"},
		},
		ToolChoice:  llm.ToolChoiceRequired,
		Temperature: &temp,
	}
	for _, stream := range []bool{false, true} {
		name := "non-stream"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(t)
			srv.Enqueue(llmtest.ServerReply{Text: "ok"})
			c, _ := newClient(t, srv, nil)
			var fn llm.StreamFunc
			if stream {
				fn = func(llm.Event) {}
			}
			if _, err := c.Generate(context.Background(), req, fn); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			rec := srv.Requests()[0]
			if got := rec.Header.Get("X-Api-Key"); got != "sk-ant-test" {
				t.Errorf("x-api-key = %q", got)
			}
			if rec.Header.Get("Anthropic-Version") == "" {
				t.Error("no anthropic-version header")
			}
			got := rec.Decoded
			if got.Model != "claude-test" || got.MaxTokens != anthropic.DefaultMaxTokens || got.Stream != stream {
				t.Errorf("model %q max_tokens %d stream %v", got.Model, got.MaxTokens, got.Stream)
			}
			if s := got.SystemText(); s != "You are Reverie.\n\nToday is Monday." {
				t.Errorf("system = %q", s)
			}
			type blk struct{ role, typ, text, id string }
			var blocks []blk
			for _, m := range got.Messages {
				for _, b := range m.Content {
					x := blk{role: m.Role, typ: b.Type, text: b.Text}
					switch b.Type {
					case "tool_use":
						x.id, x.text = b.ID, b.Name+string(b.Input)
					case "tool_result":
						x.id, x.text = b.ToolUseID, b.ResultText()
						if b.IsError {
							x.text += " (error)"
						}
					}
					blocks = append(blocks, x)
				}
			}
			want := []blk{
				{"user", "text", "What is the weather in Paris?", ""},
				{"user", "text", "And the time?", ""},
				{"assistant", "text", "Let me check.", ""},
				{"assistant", "tool_use", `get_weather{"city":"Paris"}`, "toolu_a"},
				{"assistant", "tool_use", `get_time{"_invalid_arguments":"\"not an object\""}`, "toolu_b"},
				{"user", "tool_result", `{"ok":true,"temp":21}`, "toolu_a"},
				{"user", "tool_result", `{"ok":false} (error)`, "toolu_b"},
				{"user", "text", "Thanks.", ""},
			}
			if !reflect.DeepEqual(blocks, want) {
				t.Errorf("blocks =\n%+v\nwant\n%+v", blocks, want)
			}
			if len(got.Messages) != 3 {
				t.Errorf("got %d messages, want 3 alternating turns", len(got.Messages))
			}
			if len(got.Tools) != 2 || got.Tools[0].Name != "get_weather" || got.Tools[0].Description != "Weather for a city" {
				t.Fatalf("tools = %+v", got.Tools)
			}
			assertJSONEqual(t, "input schema", got.Tools[0].InputSchema, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
			assertJSONEqual(t, "empty input schema", got.Tools[1].InputSchema, `{"type":"object","properties":{}}`)
			if got.ToolChoice == nil || got.ToolChoice.Type != "any" {
				t.Errorf("tool_choice = %+v, want any", got.ToolChoice)
			}
			if got.Temperature == nil || *got.Temperature != 0.3 {
				t.Errorf("temperature = %v", got.Temperature)
			}
		})
	}
}

func TestToolResultsOpenTheUserTurn(t *testing.T) {
	srv := llmtest.NewAnthropicServer(t)
	srv.Enqueue(llmtest.ServerReply{Text: "ok"})
	c, _ := newClient(t, srv, nil)
	req := llm.Request{Messages: []llm.Message{
		llm.UserText("go"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCall{ID: "t1", Name: "x", Arguments: json.RawMessage(`{}`)}}},
		llm.UserText("also this"),
		{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "t1", Content: "done"}}},
	}}
	if _, err := c.Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	last := srv.MessageRequests()[0].Messages[2]
	if last.Role != "user" || len(last.Content) != 2 || last.Content[0].Type != "tool_result" || last.Content[1].Text != "also this" {
		t.Errorf("last turn = %+v", last)
	}
}

func TestStructuredOutput(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	answer := json.RawMessage(`{"answer":"21C in Paris"}`)
	tests := []struct {
		name       string
		tools      []llm.ToolSpec
		choice     llm.ToolChoice
		stream     bool
		wantChoice llmtest.AnthropicToolChoice
		wantTools  int
	}{
		{name: "forced tool", wantChoice: llmtest.AnthropicToolChoice{Type: "tool", Name: "weather_answer"}, wantTools: 1},
		{name: "forced tool streamed", stream: true, wantChoice: llmtest.AnthropicToolChoice{Type: "tool", Name: "weather_answer"}, wantTools: 1},
		{name: "tools off", tools: []llm.ToolSpec{{Name: "x"}}, choice: llm.ToolChoiceNone,
			wantChoice: llmtest.AnthropicToolChoice{Type: "tool", Name: "weather_answer"}, wantTools: 1},
		{name: "alongside tools", tools: []llm.ToolSpec{{Name: "x"}},
			wantChoice: llmtest.AnthropicToolChoice{Type: "any"}, wantTools: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(t)
			srv.Enqueue(llmtest.ServerReply{ToolCalls: []llm.ToolCall{{Name: "weather_answer", Arguments: answer}}, Chunks: 5})
			c, _ := newClient(t, srv, nil)
			req := hello()
			req.Tools, req.ToolChoice = tc.tools, tc.choice
			req.ResponseFormat = &llm.ResponseFormat{Name: "weather_answer", Schema: schema, Strict: true}
			var st streamed
			var fn llm.StreamFunc
			if tc.stream {
				fn = st.fn
			}
			resp, err := c.Generate(context.Background(), req, fn)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Text() != string(answer) || len(resp.Message.ToolCalls()) != 0 || resp.StopReason != llm.StopEnd {
				t.Errorf("response = %+v, want the answer as text", resp)
			}
			if tc.stream {
				st.check(t, resp)
				if st.count(llm.EventToolCallDelta) != 0 {
					t.Error("structured output streamed as tool-call deltas")
				}
			}
			got := srv.MessageRequests()[0]
			if got.ToolChoice == nil || *got.ToolChoice != tc.wantChoice {
				t.Errorf("tool_choice = %+v, want %+v", got.ToolChoice, tc.wantChoice)
			}
			if len(got.Tools) != tc.wantTools {
				t.Fatalf("tools = %+v", got.Tools)
			}
			last := got.Tools[len(got.Tools)-1]
			if last.Name != "weather_answer" {
				t.Errorf("structured tool name = %q", last.Name)
			}
			assertJSONEqual(t, "structured schema", last.InputSchema, string(schema))
		})
	}
}

func TestInvalidRequestIsNotSent(t *testing.T) {
	srv := llmtest.NewAnthropicServer(t)
	c, _ := newClient(t, srv, nil)
	tests := map[string]llm.Request{
		"no messages":         {},
		"only system":         {Messages: []llm.Message{llm.SystemText("x")}},
		"tool schema broken":  {Messages: hello().Messages, Tools: []llm.ToolSpec{{Name: "x", Parameters: json.RawMessage(`[1`)}}},
		"result in assistant": {Messages: []llm.Message{{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolResult{CallID: "a"}}}}},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := c.Generate(context.Background(), req, nil); !errors.Is(err, providers.ErrBadRequest) {
				t.Fatalf("err = %v, want ErrBadRequest", err)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server saw %d requests", n)
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := llmtest.NewAnthropicServer(t)
	srv.Enqueue(llmtest.ServerReply{Text: "one two three four", Chunks: 4, StallAfter: 5})
	c, clock := newClient(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := c.Generate(ctx, hello(), func(ev llm.Event) {
		if ev.Kind == llm.EventTextDelta {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("err = %v, want context.Canceled only", err)
	}
	if len(clock.Sleeps()) != 0 || len(srv.MessageRequests()) != 1 {
		t.Errorf("retried after cancel")
	}
}

func TestIdleTimeout(t *testing.T) {
	const idle = 5 * time.Second
	srv := llmtest.NewAnthropicServer(t)
	// message_start, content_block_start, ping, two text deltas, then silence.
	srv.Enqueue(llmtest.ServerReply{Text: "never finishing", Chunks: 2, StallAfter: 5})
	c, clock := newClient(t, srv, func(o *anthropic.Options) { o.Timeouts = providers.Timeouts{Idle: idle, FirstByte: 30 * time.Second} })
	got := make(chan llm.Event, 16)
	done := make(chan error, 1)
	go func() {
		_, err := c.Generate(context.Background(), hello(), func(ev llm.Event) { got <- ev })
		done <- err
	}()
	for range 2 {
		<-got
	}
	clock.BlockUntilArmed(idle)
	clock.Advance(idle)
	if err := <-done; !errors.Is(err, providers.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	if len(srv.MessageRequests()) != 1 {
		t.Error("a stream that already delivered deltas was retried")
	}
}

func TestPing(t *testing.T) {
	srv := llmtest.NewAnthropicServer(t)
	c, _ := newClient(t, srv, nil)
	if what, err := c.Ping(context.Background()); err != nil || what != "the model list with the API key" {
		t.Fatalf("Ping: %q %v", what, err)
	}
	if rs := srv.Requests(); len(rs) != 1 || rs[0].Method != http.MethodGet || rs[0].Path != "/v1/models" {
		t.Errorf("requests = %+v", rs)
	}
	srv.SetModelsStatus(http.StatusUnauthorized)
	if _, err := c.Ping(context.Background()); !errors.Is(err, providers.ErrAuth) {
		t.Fatalf("Ping = %v, want ErrAuth", err)
	}
}

func TestNewValidates(t *testing.T) {
	for name, o := range map[string]anthropic.Options{
		"no model":        {},
		"relative url":    {BaseURL: "api.anthropic.com", Model: "m"},
		"negative tokens": {Model: "m", MaxTokens: -5},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := anthropic.New(o); err == nil {
				t.Fatal("New accepted invalid options")
			}
		})
	}
}

func assertJSONEqual(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s: %s is not JSON: %v", what, got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// An image with data is an image block with a base64 source, in order with
// the text; one without data (not loaded) is its note as text.
func TestImageParts(t *testing.T) {
	lastMark := &llmtest.CacheControl{Type: "ephemeral"} // the request's end is a cache breakpoint
	jpeg := []byte("\xff\xd8\xff\xe0 jpeg bytes")
	tests := []struct {
		name  string
		image llm.Image
		want  []llmtest.ContentBlock
	}{
		{name: "loaded", image: llm.Image{MediaType: "image/jpeg", Path: "telegram/1/p.jpg", Data: jpeg},
			want: []llmtest.ContentBlock{
				{Type: "image", Source: &llmtest.ImageSource{Type: "base64", MediaType: "image/jpeg", Data: base64.StdEncoding.EncodeToString(jpeg)}},
				{Type: "text", Text: "what is this?", CacheControl: lastMark}}},
		{name: "not loaded", image: llm.Image{MediaType: "image/jpeg", Path: "telegram/1/p.jpg"},
			want: []llmtest.ContentBlock{
				{Type: "text", Text: "[image saved at workspace/telegram/1/p.jpg; the image was not loaded]"},
				{Type: "text", Text: "what is this?", CacheControl: lastMark}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(t)
			srv.Enqueue(llmtest.ServerReply{Text: "a cat"})
			c, _ := newClient(t, srv, nil)
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{tc.image, llm.Text{Text: "what is this?"}}}}}
			if _, err := c.Generate(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			if got := srv.MessageRequests()[0].Messages[0].Content; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("content =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestThinking: with a thinking budget the request turns extended thinking
// on; thinking blocks (streamed as thinking_delta and signature_delta, or
// whole) become signed thinking parts; the signed blocks of a reply that
// called tools go back with it, as the API requires, and no other thinking
// is ever sent back.
func TestThinking(t *testing.T) {
	for _, stream := range []bool{true, false} {
		name := "whole"
		if stream {
			name = "streamed"
		}
		t.Run(name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(t)
			c, _ := newClient(t, srv, func(o *anthropic.Options) { o.ThinkingBudget = 2048; o.MaxTokens = 1000 })
			const thought = "Check the clock first. Plan7 stays private."
			srv.Enqueue(
				llmtest.ServerReply{Thinking: thought, ThinkingSignature: "sig-abc", RedactedThinking: "enc-xyz",
					ToolCalls: []llm.ToolCall{{Name: "clock", Arguments: json.RawMessage(`{}`)}}},
				llmtest.ServerReply{Thinking: "Now answer. Answer3 musing.", Text: "It is noon."},
				llmtest.ServerReply{Text: "ok"},
			)
			var s streamed
			var fn llm.StreamFunc
			if stream {
				fn = s.fn
			}
			req := llm.Request{Messages: []llm.Message{llm.UserText("time?")}, Tools: []llm.ToolSpec{{Name: "clock"}}, Temperature: new(0.2)}
			resp, err := c.Generate(context.Background(), req, fn)
			if err != nil {
				t.Fatal(err)
			}
			want := []llm.Part{
				llm.Thinking{Text: thought, Signature: "sig-abc"},
				llm.Thinking{Redacted: "enc-xyz"},
				resp.Message.ToolCalls()[0],
			}
			if !reflect.DeepEqual(resp.Message.Parts, want) {
				t.Errorf("parts = %#v, want %#v", resp.Message.Parts, want)
			}
			if stream {
				s.check(t, resp)
				var th strings.Builder
				for _, ev := range s.events {
					if ev.Kind == llm.EventThinkingDelta {
						th.WriteString(ev.Text)
					}
				}
				if th.String() != thought {
					t.Errorf("thinking deltas = %q", th.String())
				}
			}
			first := srv.Requests()[0]
			var sent struct {
				MaxTokens   int      `json:"max_tokens"`
				Temperature *float64 `json:"temperature"`
				Thinking    struct {
					Type   string `json:"type"`
					Budget int    `json:"budget_tokens"`
				} `json:"thinking"`
			}
			if err := json.Unmarshal(first.Body, &sent); err != nil {
				t.Fatal(err)
			}
			if sent.Thinking.Type != "enabled" || sent.Thinking.Budget != 2048 || sent.MaxTokens <= 2048 || sent.Temperature != nil {
				t.Errorf("request thinking %+v, max_tokens %d, temperature %v", sent.Thinking, sent.MaxTokens, sent.Temperature)
			}

			// The tool round: the signed blocks go back with the call.
			call := resp.Message.ToolCalls()[0]
			req.Messages = append(req.Messages, resp.Message,
				llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: call.ID, Name: "clock", Content: "12:00"}}})
			resp2, err := c.Generate(context.Background(), req, fn)
			if err != nil {
				t.Fatal(err)
			}
			assistant := srv.MessageRequests()[1].Messages[1]
			if assistant.Role != "assistant" || len(assistant.Content) != 3 ||
				assistant.Content[0].Type != "thinking" || assistant.Content[0].Thinking != thought || assistant.Content[0].Signature != "sig-abc" ||
				assistant.Content[1].Type != "redacted_thinking" || assistant.Content[1].Data != "enc-xyz" ||
				assistant.Content[2].Type != "tool_use" {
				t.Errorf("assistant message sent back = %+v", assistant)
			}

			// A later turn: the reply without tool calls keeps its
			// thinking to itself.
			req.Messages = append(req.Messages, resp2.Message, llm.UserText("thanks"))
			if _, err := c.Generate(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			if body := string(srv.Requests()[2].Body); strings.Contains(body, "Answer3") {
				t.Errorf("the final reply's thinking was sent back: %s", body)
			}
		})
	}
}

// TestThinkingOff: without a budget no thinking is asked for or sent back,
// and a forced tool turns thinking off for that request.
func TestThinkingOff(t *testing.T) {
	history := []llm.Message{
		llm.UserText("time?"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.Thinking{Text: "Hidden5", Signature: "s"}, llm.ToolCall{ID: "toolu_1", Name: "clock", Arguments: json.RawMessage(`{}`)}}},
		{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "toolu_1", Name: "clock", Content: "12:00"}}},
	}
	tests := []struct {
		name   string
		budget int
		req    llm.Request
	}{
		{"no budget", 0, llm.Request{Messages: history}},
		{"forced tool", 2048, llm.Request{Messages: history, Tools: []llm.ToolSpec{{Name: "clock"}}, ToolChoice: llm.ToolChoiceRequired}},
		{"structured output", 2048, llm.Request{Messages: history, ResponseFormat: &llm.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)}}},
		{"unsigned tool call last", 2048, llm.Request{Messages: []llm.Message{history[0],
			{Role: llm.RoleAssistant, Parts: []llm.Part{llm.Thinking{Text: "Hidden5"}, llm.ToolCall{ID: "toolu_1", Name: "clock", Arguments: json.RawMessage(`{}`)}}}, history[2]}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(t)
			c, _ := newClient(t, srv, func(o *anthropic.Options) { o.ThinkingBudget = tc.budget })
			srv.Enqueue(llmtest.ServerReply{Text: `{"a":1}`})
			if _, err := c.Generate(context.Background(), tc.req, nil); err != nil {
				t.Fatal(err)
			}
			body := string(srv.Requests()[0].Body)
			if strings.Contains(body, "Hidden5") || strings.Contains(body, `"thinking"`) {
				t.Errorf("thinking in the request: %s", body)
			}
		})
	}
}

func TestCacheBreakpoints(t *testing.T) {
	history := []llm.Message{
		llm.UserText("first question"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			llm.Text{Text: "Let me check."},
			llm.ToolCall{ID: "toolu_a", Name: "get_time", Arguments: json.RawMessage(`{}`)},
		}},
		{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "toolu_a", Name: "get_time", Content: "09:00"}}},
		llm.AssistantText("It is nine."),
	}
	turn := []llm.Message{llm.UserText("[TURN CONTEXT] time"), llm.UserText("second question")}
	tests := []struct {
		name   string
		req    llm.Request
		system bool
		// marked are the marked blocks, as "role:type:text".
		marked []string
	}{
		{"prefix and end", llm.Request{System: "You are Reverie.", Messages: append(slices.Clone(history), turn...), CachePrefix: len(history)},
			true, []string{"assistant:text:It is nine.", "user:text:second question"}},
		{"no prefix", llm.Request{System: "You are Reverie.", Messages: append(slices.Clone(history), turn...)},
			true, []string{"user:text:second question"}},
		{"prefix is the whole request", llm.Request{Messages: history, CachePrefix: len(history)},
			false, []string{"assistant:text:It is nine."}},
		{"ends with tool results", llm.Request{System: "s", Messages: history[:3], CachePrefix: 1},
			true, []string{"user:text:first question", "user:tool_result:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(t)
			srv.Enqueue(llmtest.ServerReply{Text: "ok"})
			c, _ := newClient(t, srv, nil)
			if _, err := c.Generate(context.Background(), tc.req, nil); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			got := srv.MessageRequests()[0]
			var sys []llmtest.ContentBlock
			if len(got.System) > 0 {
				if err := json.Unmarshal(got.System, &sys); err != nil {
					t.Fatalf("system is not blocks: %s", got.System)
				}
			}
			if marked := len(sys) == 1 && sys[0].CacheControl != nil && sys[0].CacheControl.Type == "ephemeral"; marked != tc.system {
				t.Errorf("system prompt marked: %v, want %v (%s)", marked, tc.system, got.System)
			}
			var marked []string
			for _, m := range got.Messages {
				for _, b := range m.Content {
					if b.CacheControl != nil {
						if b.CacheControl.Type != "ephemeral" {
							t.Errorf("cache_control type %q", b.CacheControl.Type)
						}
						marked = append(marked, m.Role+":"+b.Type+":"+b.Text)
					}
				}
			}
			if !slices.Equal(marked, tc.marked) {
				t.Errorf("marked blocks %q, want %q", marked, tc.marked)
			}
		})
	}
}
