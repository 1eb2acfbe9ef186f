package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/llm"
)

// stream runs a streamed message, handing deltas to a.Emit, and returns the
// accumulated reply. A stream that ends without message_stop is a bad
// response; an error event is ErrUnavailable (overloaded, api error).
func (c *Client) stream(ctx context.Context, a *providers.Attempt, params sdk.MessageNewParams, st structuredTool) (llm.Response, error) {
	s := c.sdk.Messages.NewStreaming(ctx, params, option.WithMiddleware(a.Middleware))
	defer s.Close()

	acc := accumulator{st: st, blocks: map[int64]*block{}}
	for s.Next() {
		evs, err := acc.add(s.Current())
		if err != nil {
			return llm.Response{}, err
		}
		for _, ev := range evs {
			a.Emit(ev)
		}
	}
	if err := s.Err(); err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) && apiErr.StatusCode < 400 {
			return llm.Response{}, providers.Unavailable(err, "error event in stream (%s)", apiErr.Type())
		}
		if strings.HasPrefix(err.Error(), "received error while streaming") {
			return llm.Response{}, providers.Unavailable(err, "error event in stream")
		}
		return llm.Response{}, err
	}
	resp, err := acc.response()
	if err != nil {
		return llm.Response{}, err
	}
	a.Emit(llm.Event{Kind: llm.EventUsage, Usage: resp.Usage})
	done := resp
	a.Emit(llm.Event{Kind: llm.EventDone, Response: &done})
	return resp, nil
}

// accumulator folds stream events into a reply and turns them into stream
// events. Tool calls are numbered in the order their blocks start.
type accumulator struct {
	st      structuredTool
	started bool
	stopped bool
	model   string
	blocks  map[int64]*block
	text    strings.Builder
	// thinking are the thinking and redacted_thinking blocks, in order.
	thinking []*thought
	calls    []*call
	stop     sdk.StopReason
	input    int64
	cacheR   int64
	cacheW   int64
	output   int64
}

type block struct {
	kind string // "text", "thinking", "tool", "structured" or "other"
	call int    // index into calls for "tool", into thinking for "thinking"
}

// thought is a thinking or redacted_thinking block being streamed.
type thought struct {
	text, signature strings.Builder
	redacted        string
}

type call struct {
	id, name string
	args     strings.Builder
}

func (acc *accumulator) add(ev sdk.MessageStreamEventUnion) ([]llm.Event, error) {
	switch ev.Type {
	case "message_start":
		acc.started = true
		m := ev.Message
		acc.model = string(m.Model)
		acc.input, acc.cacheR, acc.cacheW = m.Usage.InputTokens, m.Usage.CacheReadInputTokens, m.Usage.CacheCreationInputTokens
		acc.output = m.Usage.OutputTokens
	case "content_block_start":
		if !acc.started {
			return nil, providers.BadResponse(nil, "content before message_start")
		}
		cb := ev.ContentBlock
		switch {
		case cb.Type == "text":
			acc.blocks[ev.Index] = &block{kind: "text"}
			if cb.Text != "" {
				acc.text.WriteString(cb.Text)
				return []llm.Event{{Kind: llm.EventTextDelta, Text: cb.Text}}, nil
			}
		case cb.Type == "thinking" || cb.Type == "redacted_thinking":
			t := &thought{redacted: cb.Data}
			t.text.WriteString(cb.Thinking)
			t.signature.WriteString(cb.Signature)
			acc.thinking = append(acc.thinking, t)
			acc.blocks[ev.Index] = &block{kind: "thinking", call: len(acc.thinking) - 1}
			if cb.Thinking != "" {
				return []llm.Event{{Kind: llm.EventThinkingDelta, Text: cb.Thinking}}, nil
			}
		case cb.Type == "tool_use" && acc.st.is(cb.Name):
			acc.blocks[ev.Index] = &block{kind: "structured"}
		case cb.Type == "tool_use":
			acc.calls = append(acc.calls, &call{id: cb.ID, name: cb.Name})
			i := len(acc.calls) - 1
			acc.blocks[ev.Index] = &block{kind: "tool", call: i}
			return []llm.Event{{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: i, ID: cb.ID, Name: cb.Name}}}, nil
		default:
			acc.blocks[ev.Index] = &block{kind: "other"}
		}
	case "content_block_delta":
		b := acc.blocks[ev.Index]
		if b == nil {
			return nil, providers.BadResponse(nil, "delta for unknown content block %d", ev.Index)
		}
		d := ev.Delta
		switch {
		case d.Type == "text_delta" && b.kind == "text":
			acc.text.WriteString(d.Text)
			return []llm.Event{{Kind: llm.EventTextDelta, Text: d.Text}}, nil
		case d.Type == "thinking_delta" && b.kind == "thinking":
			acc.thinking[b.call].text.WriteString(d.Thinking)
			if d.Thinking != "" {
				return []llm.Event{{Kind: llm.EventThinkingDelta, Text: d.Thinking}}, nil
			}
		case d.Type == "signature_delta" && b.kind == "thinking":
			acc.thinking[b.call].signature.WriteString(d.Signature)
		case d.Type == "input_json_delta" && b.kind == "structured":
			acc.text.WriteString(d.PartialJSON)
			if d.PartialJSON != "" {
				return []llm.Event{{Kind: llm.EventTextDelta, Text: d.PartialJSON}}, nil
			}
		case d.Type == "input_json_delta" && b.kind == "tool":
			c := acc.calls[b.call]
			c.args.WriteString(d.PartialJSON)
			if d.PartialJSON != "" {
				return []llm.Event{{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: b.call, ArgumentsDelta: d.PartialJSON}}}, nil
			}
		}
	case "message_delta":
		acc.stop = ev.Delta.StopReason
		u := ev.Usage
		acc.output = u.OutputTokens
		if u.InputTokens > 0 {
			acc.input = u.InputTokens
		}
		if u.CacheReadInputTokens > 0 {
			acc.cacheR = u.CacheReadInputTokens
		}
		if u.CacheCreationInputTokens > 0 {
			acc.cacheW = u.CacheCreationInputTokens
		}
	case "message_stop":
		acc.stopped = true
	}
	return nil, nil
}

func (acc *accumulator) response() (llm.Response, error) {
	if !acc.started {
		return llm.Response{}, providers.BadResponse(nil, "stream ended without message_start")
	}
	if !acc.stopped {
		return llm.Response{}, providers.BadResponse(nil, "stream ended before message_stop")
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	for _, t := range acc.thinking {
		msg.Parts = append(msg.Parts, llm.Thinking{Text: t.text.String(), Signature: t.signature.String(), Redacted: t.redacted})
	}
	if acc.text.Len() > 0 {
		msg.Parts = append(msg.Parts, llm.Text{Text: acc.text.String()})
	}
	for _, c := range acc.calls {
		args := c.args.String()
		if args == "" {
			args = "{}"
		}
		msg.Parts = append(msg.Parts, llm.ToolCall{ID: c.id, Name: c.name, Arguments: json.RawMessage(args)})
	}
	return llm.Response{
		Message:    msg,
		Usage:      usage(acc.input, acc.cacheR, acc.cacheW, acc.output),
		StopReason: stopReason(acc.stop, len(acc.calls) > 0),
		Model:      acc.model,
	}, nil
}
