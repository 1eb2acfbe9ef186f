package openai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/providers/openai"
	"github.com/reverie-ai/reverie/internal/providers/providerstest"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

func newClient(t *testing.T, srv *llmtest.OpenAIServer, mod func(*openai.Options)) (*openai.Client, *providerstest.Clock) {
	t.Helper()
	clock := providerstest.NewClock()
	o := openai.Options{
		Name:       "testai",
		BaseURL:    srv.BaseURL(),
		APIKey:     "sk-test",
		Model:      "gpt-test",
		HTTPClient: srv.Client(),
		Clock:      clock,
		Jitter:     func() float64 { return 0 },
	}
	if mod != nil {
		mod(&o)
	}
	c, err := openai.New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, clock
}

func hello() llm.Request {
	return llm.Request{Messages: []llm.Message{llm.UserText("hello")}}
}

// streamed collects stream events and checks they agree with the response.
type streamed struct{ events []llm.Event }

func (s *streamed) fn(ev llm.Event) { s.events = append(s.events, ev) }

func (s *streamed) check(t *testing.T, resp llm.Response) {
	t.Helper()
	var text strings.Builder
	args := map[int]string{}
	ids := map[int]string{}
	names := map[int]string{}
	var done *llm.Response
	for i, ev := range s.events {
		if done != nil {
			t.Fatalf("event %d (%s) after done", i, ev.Kind)
		}
		switch ev.Kind {
		case llm.EventTextDelta:
			text.WriteString(ev.Text)
		case llm.EventToolCallDelta:
			d := ev.ToolCall
			args[d.Index] += d.ArgumentsDelta
			if d.ID != "" {
				ids[d.Index] = d.ID
			}
			if d.Name != "" {
				names[d.Index] = d.Name
			}
		case llm.EventDone:
			done = ev.Response
		}
	}
	if done == nil {
		t.Fatal("no done event")
	}
	if !reflect.DeepEqual(*done, resp) {
		t.Errorf("done event response = %+v, want the returned %+v", *done, resp)
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

func (s *streamed) count(kind llm.EventKind) int {
	n := 0
	for _, ev := range s.events {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func TestGenerate(t *testing.T) {
	weather := llm.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris","unit":"celsius","days":3}`)}
	clockStart := providerstest.NewClock().Now()
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
		wantCalls2 int // requests the server saw
		minDeltas  int // minimum tool-call delta events when streaming
	}{
		{
			name:      "text reply",
			replies:   []llmtest.ServerReply{{Text: "Hello there, friend.", Usage: llm.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 2}}},
			wantText:  "Hello there, friend.",
			wantUsage: llm.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 2},
			wantStop:  llm.StopEnd, wantCalls2: 1,
		},
		{
			name:      "text reply streamed",
			replies:   []llmtest.ServerReply{{Text: "Hello there, friend.", Chunks: 4, Usage: llm.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 2}}},
			stream:    true,
			wantText:  "Hello there, friend.",
			wantUsage: llm.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 2},
			wantStop:  llm.StopEnd, wantCalls2: 1,
		},
		{
			name:      "tool call",
			replies:   []llmtest.ServerReply{{ToolCalls: []llm.ToolCall{weather}, Usage: llm.Usage{InputTokens: 30, OutputTokens: 9}}},
			wantCalls: []llm.ToolCall{{ID: "call_1_1", Name: weather.Name, Arguments: weather.Arguments}},
			wantUsage: llm.Usage{InputTokens: 30, OutputTokens: 9},
			wantStop:  llm.StopToolCalls, wantCalls2: 1,
		},
		{
			name:      "tool call arguments split over six chunks",
			replies:   []llmtest.ServerReply{{Text: "Checking.", ToolCalls: []llm.ToolCall{weather}, Chunks: 6, Usage: llm.Usage{InputTokens: 30, OutputTokens: 9}}},
			stream:    true,
			wantText:  "Checking.",
			wantCalls: []llm.ToolCall{{ID: "call_1_1", Name: weather.Name, Arguments: weather.Arguments}},
			wantUsage: llm.Usage{InputTokens: 30, OutputTokens: 9},
			wantStop:  llm.StopToolCalls, wantCalls2: 1, minDeltas: 7,
		},
		{
			name: "two interleaved tool calls",
			replies: []llmtest.ServerReply{{Interleave: true, Chunks: 5, ToolCalls: []llm.ToolCall{
				weather, {Name: "get_time", Arguments: json.RawMessage(`{"zone":"Europe/Paris"}`)},
			}}},
			stream: true,
			wantCalls: []llm.ToolCall{
				{ID: "call_1_1", Name: "get_weather", Arguments: weather.Arguments},
				{ID: "call_1_2", Name: "get_time", Arguments: json.RawMessage(`{"zone":"Europe/Paris"}`)},
			},
			wantStop: llm.StopToolCalls, wantCalls2: 1, minDeltas: 12,
		},
		{
			name:     "length stop",
			replies:  []llmtest.ServerReply{{Text: "cut", StopReason: "length"}},
			stream:   true,
			wantText: "cut",
			wantStop: llm.StopMaxTokens, wantCalls2: 1,
		},
		{
			name: "429 with Retry-After seconds then success",
			replies: []llmtest.ServerReply{
				{Status: http.StatusTooManyRequests, RetryAfter: "2"},
				{Text: "ok"},
			},
			wantText: "ok", wantStop: llm.StopEnd, wantCalls2: 2,
			wantSleeps: []time.Duration{2 * time.Second},
		},
		{
			name: "429 with Retry-After date then success streamed",
			replies: []llmtest.ServerReply{
				{Status: http.StatusTooManyRequests, RetryAfter: clockStart.Add(7 * time.Second).Format(http.TimeFormat)},
				{Text: "ok"},
			},
			stream:   true,
			wantText: "ok", wantStop: llm.StopEnd, wantCalls2: 2,
			wantSleeps: []time.Duration{7 * time.Second},
		},
		{
			name: "Retry-After capped",
			replies: []llmtest.ServerReply{
				{Status: http.StatusTooManyRequests, RetryAfter: "3600"},
				{Text: "ok"},
			},
			wantText: "ok", wantStop: llm.StopEnd, wantCalls2: 2,
			wantSleeps: []time.Duration{providers.DefaultMaxRetryAfter},
		},
		{
			name:     "500 then success",
			replies:  []llmtest.ServerReply{{Status: 500}, {Text: "recovered"}},
			wantText: "recovered", wantStop: llm.StopEnd, wantCalls2: 2,
			wantSleeps: []time.Duration{250 * time.Millisecond},
		},
		{
			name:     "503 then success streamed",
			replies:  []llmtest.ServerReply{{Status: 503}, {Text: "recovered"}},
			stream:   true,
			wantText: "recovered", wantStop: llm.StopEnd, wantCalls2: 2,
			wantSleeps: []time.Duration{250 * time.Millisecond},
		},
		{
			name:       "500 exhausted",
			replies:    []llmtest.ServerReply{{Status: 500}, {Status: 500}, {Status: 502}, {Status: 500}},
			wantErr:    providers.ErrUnavailable,
			wantStatus: 500, wantCalls2: 4,
			wantSleeps: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second},
		},
		{
			name:       "401 is not retried",
			replies:    []llmtest.ServerReply{{Status: http.StatusUnauthorized}},
			wantErr:    providers.ErrAuth,
			wantStatus: 401, wantCalls2: 1,
		},
		{
			name:       "404 unknown model",
			replies:    []llmtest.ServerReply{{Status: http.StatusNotFound}},
			stream:     true,
			wantErr:    providers.ErrNotFound,
			wantStatus: 404, wantCalls2: 1,
		},
		{
			name:       "400 context too long",
			replies:    []llmtest.ServerReply{{Status: http.StatusBadRequest, ErrorMessage: "This model's maximum context length is 8192 tokens."}},
			wantErr:    providers.ErrBadRequest,
			wantStatus: 400, wantCalls2: 1,
		},
		{
			name:    "stream cut by a dropped connection",
			replies: []llmtest.ServerReply{{Text: "this will not finish", Chunks: 5, CutAfter: 3}},
			stream:  true,
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantCalls2: 1,
		},
		{
			name:    "stream ended without finish_reason",
			replies: []llmtest.ServerReply{{Text: "this will not finish", Chunks: 5, CutAfter: 3, CleanCut: true}},
			stream:  true,
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantCalls2: 1,
		},
		{
			name:    "empty choices",
			replies: []llmtest.ServerReply{{EmptyChoices: true}},
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantCalls2: 1,
		},
		{
			name:    "empty choices streamed",
			replies: []llmtest.ServerReply{{EmptyChoices: true}},
			stream:  true,
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantCalls2: 1,
		},
		{
			name:     "error event before any delta is retried",
			replies:  []llmtest.ServerReply{{StreamError: "server_error"}, {Text: "recovered"}},
			stream:   true,
			wantText: "recovered", wantStop: llm.StopEnd, wantCalls2: 2,
			wantSleeps: []time.Duration{250 * time.Millisecond},
		},
		{
			name:       "error event after deltas",
			replies:    []llmtest.ServerReply{{Text: "partial text here", Chunks: 4, StreamError: "server_error", CutAfter: 3}, {Text: "unused"}},
			stream:     true,
			wantErr:    providers.ErrUnavailable,
			wantStatus: 200, wantCalls2: 1,
		},
		{
			name:    "garbage body",
			replies: []llmtest.ServerReply{{Garbage: true}},
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantCalls2: 1,
		},
		{
			name:    "garbage stream",
			replies: []llmtest.ServerReply{{Garbage: true}},
			stream:  true,
			wantErr: providers.ErrBadResponse, wantStatus: 200, wantCalls2: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAIServer(t)
			srv.Enqueue(tc.replies...)
			c, clock := newClient(t, srv, nil)
			var st streamed
			var fn llm.StreamFunc
			if tc.stream {
				fn = st.fn
			}
			resp, err := c.Generate(context.Background(), hello(), fn)
			if got := len(srv.ChatRequests()); got != tc.wantCalls2 {
				t.Errorf("server saw %d requests, want %d", got, tc.wantCalls2)
			}
			if got := clock.Sleeps(); !reflect.DeepEqual(got, tc.wantSleeps) && (len(got) > 0 || len(tc.wantSleeps) > 0) {
				t.Errorf("slept %v, want %v", got, tc.wantSleeps)
			}
			if tc.wantErr != nil {
				var pe *providers.Error
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v (%T), want a *providers.Error", err, err)
				}
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if pe.Provider != "testai" || pe.Model != "gpt-test" || pe.Status != tc.wantStatus {
					t.Errorf("error fields = (%q, %q, %d), want (testai, gpt-test, %d)", pe.Provider, pe.Model, pe.Status, tc.wantStatus)
				}
				if msg := err.Error(); !strings.Contains(msg, "testai") || !strings.Contains(msg, "gpt-test") {
					t.Errorf("error %q does not name provider and model", msg)
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
			if resp.StopReason != tc.wantStop {
				t.Errorf("stop = %q, want %q", resp.StopReason, tc.wantStop)
			}
			if resp.Model != "gpt-test" || resp.Message.Role != llm.RoleAssistant {
				t.Errorf("model %q role %q", resp.Model, resp.Message.Role)
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

func TestStreamErrorAfterEventsIsNotRetried(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t)
	srv.Enqueue(llmtest.ServerReply{Text: "partial answer here", Chunks: 4, CutAfter: 3}, llmtest.ServerReply{Text: "must not be used"})
	c, clock := newClient(t, srv, nil)
	var st streamed
	_, err := c.Generate(context.Background(), hello(), st.fn)
	if !errors.Is(err, providers.ErrBadResponse) {
		t.Fatalf("err = %v, want ErrBadResponse", err)
	}
	if st.count(llm.EventTextDelta) == 0 {
		t.Fatal("expected deltas before the cut")
	}
	if srv.Pending() != 1 || len(clock.Sleeps()) != 0 {
		t.Errorf("retried after streaming: pending %d, sleeps %v", srv.Pending(), clock.Sleeps())
	}
}

func TestRequestMapping(t *testing.T) {
	temp := 0.2
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	req := llm.Request{
		System: "You are Reverie.",
		Messages: []llm.Message{
			llm.UserText("What is the weather in Paris?"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				llm.Text{Text: "Let me check."},
				llm.ToolCall{ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				llm.ToolCall{ID: "call_b", Name: "get_time", Arguments: nil},
			}},
			{Role: llm.RoleTool, Parts: []llm.Part{
				llm.ToolResult{CallID: "call_a", Name: "get_weather", Content: `{"ok":true,"temp":21}`},
				llm.ToolResult{CallID: "call_b", Name: "get_time", Content: `{"ok":false,"error":{"message":"no clock"}}`, IsError: true},
			}},
			llm.UserText("Thanks."),
		},
		Tools: []llm.ToolSpec{
			{Name: "get_weather", Description: "Weather for a city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time"},
		},
		ToolChoice:     llm.ToolChoiceRequired,
		Temperature:    &temp,
		MaxTokens:      256,
		ResponseFormat: &llm.ResponseFormat{Name: "weather_answer", Schema: schema, Strict: true},
	}
	for _, stream := range []bool{false, true} {
		name := "non-stream"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			srv := llmtest.NewOpenAIServer(t)
			srv.Enqueue(llmtest.ServerReply{Text: `{"answer":"21C"}`})
			c, _ := newClient(t, srv, func(o *openai.Options) { o.ExtraHeaders = map[string]string{"X-Title": "Reverie"} })
			var fn llm.StreamFunc
			if stream {
				fn = func(llm.Event) {}
			}
			if _, err := c.Generate(context.Background(), req, fn); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			rec := srv.Requests()[0]
			if got := rec.Header.Get("Authorization"); got != "Bearer sk-test" {
				t.Errorf("Authorization = %q", got)
			}
			if got := rec.Header.Get("X-Title"); got != "Reverie" {
				t.Errorf("X-Title = %q", got)
			}
			got := rec.Decoded
			if got.Model != "gpt-test" {
				t.Errorf("model = %q", got.Model)
			}
			type msg struct{ role, text, callID string }
			var msgs []msg
			for _, m := range got.Messages {
				msgs = append(msgs, msg{m.Role, m.Text(), m.ToolCallID})
			}
			want := []msg{
				{"system", "You are Reverie.", ""},
				{"user", "What is the weather in Paris?", ""},
				{"assistant", "Let me check.", ""},
				{"tool", `{"ok":true,"temp":21}`, "call_a"},
				{"tool", `{"ok":false,"error":{"message":"no clock"}}`, "call_b"},
				{"user", "Thanks.", ""},
			}
			if !reflect.DeepEqual(msgs, want) {
				t.Errorf("messages =\n%+v\nwant\n%+v", msgs, want)
			}
			calls := got.Messages[2].ToolCalls
			if len(calls) != 2 || calls[0].ID != "call_a" || calls[0].Type != "function" ||
				calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` ||
				calls[1].Function.Arguments != "{}" {
				t.Errorf("assistant tool calls = %+v", calls)
			}
			if len(got.Tools) != 2 || got.Tools[0].Type != "function" || got.Tools[0].Function.Name != "get_weather" ||
				got.Tools[0].Function.Description != "Weather for a city" {
				t.Fatalf("tools = %+v", got.Tools)
			}
			assertJSONEqual(t, "tool parameters", got.Tools[0].Function.Parameters, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
			assertJSONEqual(t, "empty tool parameters", got.Tools[1].Function.Parameters, `{"type":"object","properties":{}}`)
			assertJSONEqual(t, "tool_choice", got.ToolChoice, `"required"`)
			if got.Temperature == nil || *got.Temperature != 0.2 {
				t.Errorf("temperature = %v", got.Temperature)
			}
			if got.MaxTokens == nil || *got.MaxTokens != 256 || got.MaxCompletionTokens != nil {
				t.Errorf("max_tokens = %v, max_completion_tokens = %v; want max_tokens 256 for a compatible server", got.MaxTokens, got.MaxCompletionTokens)
			}
			rf := got.ResponseFormat
			if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || rf.JSONSchema.Name != "weather_answer" ||
				rf.JSONSchema.Strict == nil || !*rf.JSONSchema.Strict {
				t.Fatalf("response_format = %+v", rf)
			}
			assertJSONEqual(t, "response schema", rf.JSONSchema.Schema, string(schema))
			if got.Stream != stream {
				t.Errorf("stream = %v", got.Stream)
			}
			// "stream" once, first: the body sets it for the SDK to find (request.stream)
			keys := topKeys(t, rec.Body)
			if n := strings.Count(strings.Join(keys, " ")+" ", "stream "); stream && (n != 1 || keys[0] != "stream") || !stream && n != 0 {
				t.Errorf("body's keys = %q", keys)
			}
			if stream && (got.StreamOptions == nil || !got.StreamOptions.IncludeUsage) {
				t.Errorf("stream_options = %+v, want include_usage", got.StreamOptions)
			}
		})
	}
}

func TestRequestDefaults(t *testing.T) {
	temp := 0.7
	srv := llmtest.NewOpenAIServer(t)
	srv.Enqueue(llmtest.ServerReply{Text: "a"}, llmtest.ServerReply{Text: "b"})
	c, _ := newClient(t, srv, func(o *openai.Options) {
		o.MaxTokens = 1000
		o.MaxTokensField = openai.FieldMaxCompletionTokens
		o.Temperature = &temp
	})
	req := hello()
	req.Tools = []llm.ToolSpec{{Name: "noop"}}
	if _, err := c.Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	req.Model = "other-model"
	req.ToolChoice = llm.ToolChoiceNone
	if _, err := c.Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.ChatRequests()
	first, second := reqs[0], reqs[1]
	if first.MaxCompletionTokens == nil || *first.MaxCompletionTokens != 1000 || first.MaxTokens != nil {
		t.Errorf("max tokens = %v / %v, want max_completion_tokens 1000", first.MaxTokens, first.MaxCompletionTokens)
	}
	if first.Temperature == nil || *first.Temperature != 0.7 {
		t.Errorf("temperature = %v, want the configured 0.7", first.Temperature)
	}
	if len(first.ToolChoice) != 0 || first.ResponseFormat != nil || first.Messages[0].Role != "user" {
		t.Errorf("auto tool choice, no format, no system: got tool_choice %s, format %+v, first role %s", first.ToolChoice, first.ResponseFormat, first.Messages[0].Role)
	}
	if second.Model != "other-model" {
		t.Errorf("model override = %q", second.Model)
	}
	assertJSONEqual(t, "tool_choice", second.ToolChoice, `"none"`)
}

func TestInvalidRequestIsNotSent(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t)
	c, _ := newClient(t, srv, nil)
	tests := map[string]llm.Request{
		"no messages":        {},
		"tool schema broken": {Messages: hello().Messages, Tools: []llm.ToolSpec{{Name: "x", Parameters: json.RawMessage(`[1`)}}},
		"tool call in user":  {Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.ToolCall{Name: "x"}}}}},
		"result without id":  {Messages: []llm.Message{{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{Name: "x"}}}}},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := c.Generate(context.Background(), req, nil)
			if !errors.Is(err, providers.ErrBadRequest) {
				t.Fatalf("err = %v, want ErrBadRequest", err)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server saw %d requests", n)
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t)
	srv.Enqueue(llmtest.ServerReply{Text: "one two three four", Chunks: 4, StallAfter: 3})
	c, clock := newClient(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deltas := 0
	_, err := c.Generate(ctx, hello(), func(ev llm.Event) {
		if ev.Kind == llm.EventTextDelta {
			deltas++
			if deltas == 2 {
				cancel()
			}
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if errors.Is(err, providers.ErrUnavailable) {
		t.Errorf("cancellation must not look like an unavailable backend: %v", err)
	}
	if len(clock.Sleeps()) != 0 || len(srv.ChatRequests()) != 1 {
		t.Errorf("retried after cancel: sleeps %v, requests %d", clock.Sleeps(), len(srv.ChatRequests()))
	}
}

func TestCancelBeforeHeaders(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t)
	gate := make(chan struct{})
	defer close(gate)
	srv.Enqueue(llmtest.ServerReply{Text: "late", Gate: gate})
	c, clock := newClient(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Generate(ctx, hello(), nil)
		done <- err
	}()
	clock.BlockUntilArmed(providers.DefaultFirstByteTimeout)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	const idle = 5 * time.Second
	srv := llmtest.NewOpenAIServer(t)
	// Role chunk and two text chunks, then silence.
	srv.Enqueue(llmtest.ServerReply{Text: "never finishing", Chunks: 2, StallAfter: 3})
	c, clock := newClient(t, srv, func(o *openai.Options) { o.Timeouts = providers.Timeouts{Idle: idle, FirstByte: 30 * time.Second} })
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
	err := <-done
	if !errors.Is(err, providers.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "stalled") {
		t.Errorf("error %q does not say the stream stalled", err)
	}
	if len(srv.ChatRequests()) != 1 {
		t.Errorf("a stream that already delivered deltas was retried")
	}
}

func TestFirstByteTimeoutIsRetried(t *testing.T) {
	const firstByte = 30 * time.Second
	srv := llmtest.NewOpenAIServer(t)
	gate := make(chan struct{})
	defer close(gate)
	for range 4 {
		srv.Enqueue(llmtest.ServerReply{Text: "slow", Gate: gate})
	}
	c, clock := newClient(t, srv, func(o *openai.Options) { o.Timeouts = providers.Timeouts{FirstByte: firstByte} })
	done := make(chan error, 1)
	go func() {
		_, err := c.Generate(context.Background(), hello(), nil)
		done <- err
	}()
	for i := range 4 {
		srv.WaitForRequests(i + 1)
		clock.BlockUntilArmed(firstByte)
		clock.Advance(firstByte)
	}
	err := <-done
	if !errors.Is(err, providers.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable after timeouts", err)
	}
	if n := len(srv.ChatRequests()); n != 4 {
		t.Errorf("attempts = %d, want 4", n)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	clock := providerstest.NewClock()
	c, err := openai.New(openai.Options{BaseURL: "http://" + addr + "/v1", Model: "m", Clock: clock, Jitter: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Generate(context.Background(), hello(), nil)
	if !errors.Is(err, providers.ErrUnavailable) || !errors.Is(err, providers.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnavailable and ErrUnreachable", err)
	}
	if got, why, ok := providers.Unreachable(err); !ok || got != addr || why != "connection refused" {
		t.Errorf("Unreachable = %q, %q, %v; want %q, connection refused", got, why, ok, addr)
	}
	if n := len(clock.Sleeps()); n != providers.DefaultMaxRetries {
		t.Errorf("retries = %d, want %d", n, providers.DefaultMaxRetries)
	}
}

// TestUnknownHost: a base URL whose host does not resolve is unreachable,
// not an outage.
func TestUnknownHost(t *testing.T) {
	clock := providerstest.NewClock()
	c, err := openai.New(openai.Options{BaseURL: "http://no-such-host.invalid/v1", Model: "m", Clock: clock, Jitter: func() float64 { return 0 }, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Generate(context.Background(), hello(), nil)
	if got, why, ok := providers.Unreachable(err); !ok || got != "no-such-host.invalid" || why != "no such host" {
		t.Errorf("Unreachable(%v) = %q, %q, %v", err, got, why, ok)
	}
}

func TestPing(t *testing.T) {
	noKey := func(o *openai.Options) { o.APIKey = "" }
	oneToken := func(t *testing.T, srv *llmtest.OpenAIServer) {
		t.Helper()
		chats := srv.ChatRequests()
		if len(chats) != 1 || chats[0].MaxTokens == nil || *chats[0].MaxTokens != 1 {
			t.Errorf("completion = %+v, want one of 1 token", chats)
		}
	}
	t.Run("a key is checked with a one-token completion, not the model list anyone may read", func(t *testing.T) {
		srv := llmtest.NewOpenAIServer(t)
		srv.Enqueue(llmtest.ServerReply{Text: "p", StopReason: "length"})
		c, _ := newClient(t, srv, nil)
		what, err := c.Ping(context.Background())
		if err != nil {
			t.Fatalf("Ping: %v", err)
		}
		oneToken(t, srv)
		if what != "a 1-token completion of gpt-test with the API key" {
			t.Errorf("checked %q", what)
		}
	})
	t.Run("a wrong key fails even where the model list is open", func(t *testing.T) {
		srv := llmtest.NewOpenAIServer(t)
		srv.Enqueue(llmtest.ServerReply{Status: http.StatusUnauthorized, ErrorMessage: "invalid api key"})
		c, _ := newClient(t, srv, nil)
		if _, err := c.Ping(context.Background()); !errors.Is(err, providers.ErrAuth) {
			t.Fatalf("Ping = %v, want ErrAuth", err)
		}
	})
	t.Run("without a key the models are listed", func(t *testing.T) {
		srv := llmtest.NewOpenAIServer(t)
		c, _ := newClient(t, srv, noKey)
		what, err := c.Ping(context.Background())
		if err != nil {
			t.Fatalf("Ping: %v", err)
		}
		if rs := srv.Requests(); len(rs) != 1 || rs[0].Method != http.MethodGet || rs[0].Path != "/v1/models" || !strings.Contains(what, "no API key") {
			t.Errorf("requests = %+v, checked %q", rs, what)
		}
	})
	t.Run("no key and no models endpoint: a one-token completion", func(t *testing.T) {
		srv := llmtest.NewOpenAIServer(t)
		srv.SetModelsStatus(http.StatusNotFound)
		srv.Enqueue(llmtest.ServerReply{Text: "p", StopReason: "length"})
		c, _ := newClient(t, srv, noKey)
		if _, err := c.Ping(context.Background()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		oneToken(t, srv)
	})
	t.Run("server down is not retried", func(t *testing.T) {
		srv := llmtest.NewOpenAIServer(t)
		srv.Enqueue(llmtest.ServerReply{Status: http.StatusServiceUnavailable})
		c, clock := newClient(t, srv, nil)
		if _, err := c.Ping(context.Background()); !errors.Is(err, providers.ErrUnavailable) {
			t.Fatalf("Ping = %v, want ErrUnavailable", err)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("ping retried")
		}
	})
}

func TestEmbedder(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t)
	srv.ReverseEmbeddings(true)
	srv.EnqueueEmbeddingFailure(llmtest.ServerReply{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	clock := providerstest.NewClock()
	e, err := openai.NewEmbedder(openai.Options{
		BaseURL: srv.BaseURL(), Model: "embed-test", Dimensions: 16, BatchSize: 64,
		HTTPClient: srv.Client(), Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 150)
	for i := range texts {
		texts[i] = "text number " + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()
	}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if want := llmtest.FakeEmbedding(texts[i], 16); !reflect.DeepEqual(v, want) {
			t.Fatalf("vector %d is not the embedding of text %d", i, i)
		}
	}
	var sizes []int
	for _, r := range srv.EmbeddingRequests() {
		if r.Model != "embed-test" || r.Dimensions != 16 || r.EncodingFormat != "float" {
			t.Errorf("request = %+v", r)
		}
		sizes = append(sizes, len(r.Texts()))
	}
	// The first batch was refused once (429) and sent again.
	if want := []int{64, 64, 64, 22}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("batch sizes = %v, want %v", sizes, want)
	}
	if got := clock.Sleeps(); !reflect.DeepEqual(got, []time.Duration{time.Second}) {
		t.Errorf("sleeps = %v", got)
	}
	if vecs, err := e.Embed(context.Background(), nil); err != nil || len(vecs) != 0 {
		t.Errorf("Embed(nil) = %v, %v", vecs, err)
	}
}

func TestNewValidates(t *testing.T) {
	tests := map[string]openai.Options{
		"no model":        {BaseURL: "http://localhost:1/v1"},
		"relative url":    {BaseURL: "localhost/v1", Model: "m"},
		"bad field":       {Model: "m", MaxTokensField: "max_output_tokens"},
		"negative tokens": {Model: "m", MaxTokens: -1},
	}
	for name, o := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := openai.New(o); err == nil {
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

// A user message with a loaded image is sent as a content array (text and
// an image_url data URL, in order); an image without data (not loaded) is
// its note inside plain text content.
func TestImageParts(t *testing.T) {
	png := []byte("\x89PNG fake")
	tests := []struct {
		name       string
		image      llm.Image
		wantText   string
		wantImages []string
	}{
		{name: "loaded", image: llm.Image{MediaType: "image/png", Path: "p.png", Data: png},
			wantText: "look:", wantImages: []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}},
		{name: "not loaded", image: llm.Image{MediaType: "image/png", Path: "p.png"},
			wantText: "look:\n[image saved at workspace/p.png; the image was not loaded]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAIServer(t)
			srv.Enqueue(llmtest.ServerReply{Text: "a chart"})
			c, _ := newClient(t, srv, nil)
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.Text{Text: "look:"}, tc.image}}}}
			if _, err := c.Generate(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			m := srv.Requests()[0].Decoded.Messages[0]
			if m.Role != "user" || m.Text() != tc.wantText || !reflect.DeepEqual(m.Images(), tc.wantImages) {
				t.Errorf("message = %s %q %q, want %q %q", m.Role, m.Text(), m.Images(), tc.wantText, tc.wantImages)
			}
			if tc.wantImages != nil && !strings.Contains(string(srv.Requests()[0].Body), `"type":"image_url"`) {
				t.Errorf("body has no image_url part: %s", srv.Requests()[0].Body)
			}
		})
	}
}

// A tool result's image cannot be in its role=tool message: it follows in
// a user message after the round's last tool message (loaded: the image;
// not loaded: its note), before the next message.
func TestToolResultImages(t *testing.T) {
	png := []byte("\x89PNG fake")
	calls := []llm.ToolCall{{ID: "c1", Name: "browser_screenshot", Arguments: json.RawMessage(`{}`)}, {ID: "c2", Name: "clock", Arguments: json.RawMessage(`{}`)}}
	tests := []struct {
		name       string
		image      llm.Image
		wantText   string
		wantImages []string
	}{
		{name: "loaded", image: llm.Image{MediaType: "image/png", Path: "shot.png", Data: png},
			wantText:   "[the image the browser_screenshot result above shows, saved at workspace/shot.png]",
			wantImages: []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}},
		{name: "not loaded", image: llm.Image{MediaType: "image/png", Path: "shot.png"},
			wantText: "[image saved at workspace/shot.png; the image was not loaded]"},
		{name: "a note (model without vision)", image: llm.Image{},
			wantText: "[image saved at workspace/shot.png; this model cannot see images]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAIServer(t)
			srv.Enqueue(llmtest.ServerReply{Text: "a page"})
			c, _ := newClient(t, srv, nil)
			var extra llm.Part = tc.image
			if tc.image.Path == "" {
				extra = llm.Text{Text: "[image saved at workspace/shot.png; this model cannot see images]"}
			}
			req := llm.Request{Messages: []llm.Message{
				llm.UserText("show me"),
				{Role: llm.RoleAssistant, Parts: []llm.Part{calls[0], calls[1]}},
				{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "c1", Name: "browser_screenshot", Content: `{"path":"shot.png"}`}, extra}},
				{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "c2", Name: "clock", Content: "noon"}}},
				llm.UserText("and now?"),
			}}
			if _, err := c.Generate(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			msgs := srv.Requests()[0].Decoded.Messages
			var roles []string
			for _, m := range msgs {
				roles = append(roles, m.Role)
			}
			if want := []string{"user", "assistant", "tool", "tool", "user", "user"}; !reflect.DeepEqual(roles, want) {
				t.Fatalf("roles = %v, want %v", roles, want)
			}
			m := msgs[4]
			if m.Text() != tc.wantText || !reflect.DeepEqual(m.Images(), tc.wantImages) {
				t.Errorf("message after the results = %q %q, want %q %q", m.Text(), m.Images(), tc.wantText, tc.wantImages)
			}
		})
	}
}

// TestThinking: reasoning in each OpenAI-compatible wire field (DeepSeek,
// vLLM and llama.cpp's reasoning_content; Ollama's /v1 and OpenRouter's
// reasoning) becomes a thinking part, streamed as thinking deltas apart from
// the text, and is not sent back to the model.
func TestThinking(t *testing.T) {
	tests := []struct {
		name, field string
		stream      bool
		calls       []llm.ToolCall
	}{
		{"reasoning_content streamed", "reasoning_content", true, nil},
		{"reasoning_content", "reasoning_content", false, nil},
		{"ollama reasoning streamed", "reasoning", true, nil},
		{"ollama reasoning with a tool call", "reasoning", false, []llm.ToolCall{{Name: "clock", Arguments: json.RawMessage(`{}`)}}},
		{"streamed with a tool call", "reasoning_content", true, []llm.ToolCall{{Name: "clock", Arguments: json.RawMessage(`{"tz":"UTC"}`)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAIServer(t)
			c, _ := newClient(t, srv, nil)
			const thought = "The user greets me; a short, warm answer fits. Secret9 plan."
			srv.Enqueue(llmtest.ServerReply{Text: "Hello there!", Thinking: thought, ThinkingField: tc.field, ToolCalls: tc.calls},
				llmtest.ServerReply{Text: "ok"})
			var s streamed
			var fn llm.StreamFunc
			if tc.stream {
				fn = s.fn
			}
			resp, err := c.Generate(context.Background(), hello(), fn)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Message.Thinking(); got != thought {
				t.Errorf("thinking = %q, want %q", got, thought)
			}
			if got := resp.Message.Text(); got != "Hello there!" {
				t.Errorf("text = %q", got)
			}
			if _, ok := resp.Message.Parts[0].(llm.Thinking); !ok {
				t.Errorf("first part is %T, want the thinking before the reply", resp.Message.Parts[0])
			}
			if tc.stream {
				s.check(t, resp)
				var th strings.Builder
				for _, ev := range s.events {
					if ev.Kind == llm.EventThinkingDelta {
						th.WriteString(ev.Text)
					}
				}
				if th.String() != thought || s.count(llm.EventThinkingDelta) < 2 {
					t.Errorf("thinking deltas = %q in %d events", th.String(), s.count(llm.EventThinkingDelta))
				}
			}
			// The history with the thinking goes back without it.
			next := hello()
			next.Messages = append(next.Messages, resp.Message)
			for _, call := range resp.Message.ToolCalls() {
				next.Messages = append(next.Messages, llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: call.ID, Name: call.Name, Content: "12:00"}}})
			}
			next.Messages = append(next.Messages, llm.UserText("again"))
			if _, err := c.Generate(context.Background(), next, nil); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			body := string(reqs[len(reqs)-1].Body)
			if strings.Contains(body, "Secret9") || strings.Contains(body, "reasoning") {
				t.Errorf("the reasoning was sent back: %s", body)
			}
			if !strings.Contains(body, "Hello there!") {
				t.Errorf("the reply is missing from the history sent: %s", body)
			}
		})
	}
}

// topKeys returns the keys of the JSON object body, in order, repeats
// included.
func topKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("body is not a JSON object: %s", body)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
