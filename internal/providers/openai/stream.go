package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/llm"
)

// stream runs a streamed completion, handing deltas to a.Emit, and returns
// the accumulated reply. A stream that ends without a finish_reason is a
// bad response.
//
// It posts through the SDK's generic call rather than its streaming one,
// which copies the whole body (tens of kilobytes) to set "stream" in it,
// and reads the events as chunks of its own (chunk).
func (c *Client) stream(ctx context.Context, a *providers.Attempt, r request) (llm.Response, error) {
	r.params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	r.stream = true
	body, err := r.body()
	if err != nil {
		return llm.Response{}, providers.BadRequest(err, "encode the request")
	}
	var raw *http.Response
	err = c.sdk.client.Post(ctx, "chat/completions", nil, &raw, option.WithRequestBody("application/json", body), option.WithMiddleware(a.Middleware))
	s := ssestream.NewStream[chunk](ssestream.NewDecoder(raw), err)
	defer s.Close()

	var acc accumulator
	for s.Next() {
		for _, ev := range acc.add(s.Current()) {
			a.Emit(ev)
		}
	}
	if err := s.Err(); err != nil {
		var se *ssestream.StreamError
		if errors.As(err, &se) {
			return llm.Response{}, providers.Unavailable(err, "error event in stream")
		}
		return llm.Response{}, err
	}
	resp, err := acc.response()
	if err != nil {
		return llm.Response{}, err
	}
	if acc.sawUsage {
		a.Emit(llm.Event{Kind: llm.EventUsage, Usage: resp.Usage})
	}
	done := resp
	a.Emit(llm.Event{Kind: llm.EventDone, Response: &done})
	return resp, nil
}

// chunk is a streamed chat-completion chunk: the fields the accumulator
// reads, decoded by encoding/json. The SDK's chunk type decodes through
// its reflective decoder over gjson, about twice the CPU and nine times
// the bytes allocated (BenchmarkChunk), and a reply streams a chunk every
// token or few.
type chunk struct {
	Model   string        `json:"model"`
	Usage   *chunkUsage   `json:"usage"` // nil when absent or null
	Choices []chunkChoice `json:"choices"`
}

type chunkUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type chunkChoice struct {
	Index        int64      `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content   string          `json:"content"`
	Refusal   string          `json:"refusal"`
	ToolCalls []chunkToolCall `json:"tool_calls"`
	// The reasoning fields (reasoningFields, in that order).
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
	Thinking         string `json:"thinking"`
}

type chunkToolCall struct {
	Index    int64  `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// UnmarshalJSON decodes what it can: a field of an unexpected type is
// left empty, as the SDK's decoding leaves it, instead of failing the
// stream.
func (c *chunk) UnmarshalJSON(b []byte) error {
	type plain chunk
	err := json.Unmarshal(b, (*plain)(c))
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return nil
	}
	return err
}

// reasoning returns the delta's reasoning text, "" when there is none.
func (d *chunkDelta) reasoning() string {
	for _, r := range [...]string{d.ReasoningContent, d.Reasoning, d.Thinking} {
		if r != "" {
			return r
		}
	}
	return ""
}

// accumulator folds chat-completion chunks into a reply and turns them into
// stream events. Tool-call deltas are grouped by the server's index; a new
// id arriving on an index already holding another call starts a new call
// (servers that number every call 0). Calls keep the order they first
// appeared in.
type accumulator struct {
	text     strings.Builder
	thinking strings.Builder
	refusal  strings.Builder
	calls    []*pendingCall
	byIndex  map[int64]int // server index → position in calls
	finish   string
	usage    llm.Usage
	sawUsage bool
	model    string
	chunks   int
}

type pendingCall struct {
	id, name string
	args     strings.Builder
}

func (acc *accumulator) add(c chunk) []llm.Event {
	acc.chunks++
	if c.Model != "" {
		acc.model = c.Model
	}
	if u := c.Usage; u != nil {
		acc.usage = llm.Usage{
			InputTokens:     int(u.PromptTokens),
			OutputTokens:    int(u.CompletionTokens),
			CacheReadTokens: int(u.PromptTokensDetails.CachedTokens),
		}
		acc.sawUsage = true
	}
	var events []llm.Event
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := &ch.Delta
		if r := d.reasoning(); r != "" {
			acc.thinking.WriteString(r)
			events = append(events, llm.Event{Kind: llm.EventThinkingDelta, Text: r})
		}
		if d.Content != "" {
			acc.text.WriteString(d.Content)
			events = append(events, llm.Event{Kind: llm.EventTextDelta, Text: d.Content})
		}
		if d.Refusal != "" {
			acc.refusal.WriteString(d.Refusal)
			events = append(events, llm.Event{Kind: llm.EventTextDelta, Text: d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			events = append(events, acc.addToolCall(tc))
		}
		if ch.FinishReason != "" {
			acc.finish = ch.FinishReason
		}
	}
	return events
}

func (acc *accumulator) addToolCall(tc chunkToolCall) llm.Event {
	if acc.byIndex == nil {
		acc.byIndex = map[int64]int{}
	}
	pos, ok := acc.byIndex[tc.Index]
	if ok && tc.ID != "" && acc.calls[pos].id != "" && acc.calls[pos].id != tc.ID {
		ok = false
	}
	if !ok {
		pos = len(acc.calls)
		acc.calls = append(acc.calls, &pendingCall{})
		acc.byIndex[tc.Index] = pos
	}
	call := acc.calls[pos]
	delta := llm.ToolCallDelta{Index: pos, ArgumentsDelta: tc.Function.Arguments}
	if tc.ID != "" && call.id == "" {
		call.id = tc.ID
		delta.ID = tc.ID
	}
	if tc.Function.Name != "" && call.name == "" {
		call.name = tc.Function.Name
		delta.Name = tc.Function.Name
	}
	call.args.WriteString(tc.Function.Arguments)
	return llm.Event{Kind: llm.EventToolCallDelta, ToolCall: delta}
}

func (acc *accumulator) response() (llm.Response, error) {
	if acc.chunks == 0 {
		return llm.Response{}, providers.BadResponse(nil, "stream ended without any chunk")
	}
	if acc.finish == "" {
		return llm.Response{}, providers.BadResponse(nil, "stream ended before completion (no finish_reason after %d chunks)", acc.chunks)
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	text, filtered := acc.text.String(), false
	if text == "" && acc.refusal.Len() > 0 {
		text, filtered = acc.refusal.String(), true
	}
	if acc.thinking.Len() > 0 {
		msg.Parts = append(msg.Parts, llm.Thinking{Text: acc.thinking.String()})
	}
	if text != "" {
		msg.Parts = append(msg.Parts, llm.Text{Text: text})
	}
	for i, c := range acc.calls {
		if c.name == "" {
			return llm.Response{}, providers.BadResponse(nil, "streamed tool call %d has no name", i)
		}
		args := c.args.String()
		if args == "" {
			args = "{}"
		}
		msg.Parts = append(msg.Parts, llm.ToolCall{ID: c.id, Name: c.name, Arguments: json.RawMessage(args)})
	}
	resp := llm.Response{
		Message:    msg,
		Usage:      acc.usage,
		StopReason: stopReason(acc.finish, len(acc.calls) > 0),
		Model:      acc.model,
	}
	if filtered {
		resp.StopReason = llm.StopFiltered
	}
	return resp, nil
}
