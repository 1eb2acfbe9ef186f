package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/llm"
)

// ErrUnscripted is returned when a Scripted model is called more times than
// it has steps.
var ErrUnscripted = errors.New("llmtest: unscripted model call")

// Step describes one expected Generate call of a Scripted model and what it
// answers. Build steps with Reply, CallTool and Fail and refine them with the
// With… methods.
type Step struct {
	// Text is the reply text.
	Text string
	// Thinking is the model's reasoning, streamed before the text and kept
	// as an llm.Thinking part.
	Thinking string
	// ToolCalls are the tool calls of the reply. Calls without an ID get a
	// deterministic one ("call_<step>_<n>").
	ToolCalls []llm.ToolCall
	// Usage is reported with the reply.
	Usage llm.Usage
	// StopReason defaults to StopToolCalls when there are tool calls and to
	// StopEnd otherwise.
	StopReason llm.StopReason
	// Model is reported as the answering model (default "scripted").
	Model string
	// Err, when set, is returned instead of a reply.
	Err error
	// Check, when set, asserts on the request; an error fails the test and
	// is returned from Generate.
	Check func(llm.Request) error
}

// Reply is a step answering with text.
func Reply(text string) Step { return Step{Text: text} }

// CallTool is a step answering with one tool call; args is its JSON.
func CallTool(name, args string) Step {
	return Step{ToolCalls: []llm.ToolCall{{Name: name, Arguments: json.RawMessage(args)}}}
}

// Fail is a step returning err.
func Fail(err error) Step { return Step{Err: err} }

// AndCallTool returns s with one more tool call.
func (s Step) AndCallTool(name, args string) Step {
	s.ToolCalls = append(slices.Clip(s.ToolCalls), llm.ToolCall{Name: name, Arguments: json.RawMessage(args)})
	return s
}

// WithText returns s with its reply text set.
func (s Step) WithText(text string) Step { s.Text = text; return s }

// WithThinking returns s reasoning thinking before its reply.
func (s Step) WithThinking(thinking string) Step { s.Thinking = thinking; return s }

// WithUsage returns s reporting u.
func (s Step) WithUsage(u llm.Usage) Step { s.Usage = u; return s }

// WithCheck returns s asserting check on its request.
func (s Step) WithCheck(check func(llm.Request) error) Step { s.Check = check; return s }

// WithStopReason returns s stopping for r.
func (s Step) WithStopReason(r llm.StopReason) Step { s.StopReason = r; return s }

// response builds the reply of step number n (from 1).
func (s Step) response(n int) llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant}
	if s.Thinking != "" {
		msg.Parts = append(msg.Parts, llm.Thinking{Text: s.Thinking})
	}
	if s.Text != "" {
		msg.Parts = append(msg.Parts, llm.Text{Text: s.Text})
	}
	for i, c := range s.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", n, i+1)
		}
		if len(c.Arguments) == 0 {
			c.Arguments = json.RawMessage("{}")
		}
		msg.Parts = append(msg.Parts, c)
	}
	resp := llm.Response{Message: msg, Usage: s.Usage, StopReason: s.StopReason, Model: s.Model}
	if resp.Model == "" {
		resp.Model = "scripted"
	}
	return complete(resp)
}

// complete fills the defaults of a response: assistant role and a stop
// reason matching its content.
func complete(resp llm.Response) llm.Response {
	if resp.Message.Role == "" {
		resp.Message.Role = llm.RoleAssistant
	}
	if resp.StopReason == "" {
		resp.StopReason = llm.StopEnd
		if len(resp.Message.ToolCalls()) > 0 {
			resp.StopReason = llm.StopToolCalls
		}
	}
	return resp
}

// Scripted is a model that plays its steps in order, one per Generate call.
type Scripted struct {
	t        testing.TB
	mu       sync.Mutex
	steps    []Step
	next     int
	requests []llm.Request
}

// NewScripted returns a model expecting exactly the given calls. Calling it
// once more fails the test and returns ErrUnscripted.
func NewScripted(t testing.TB, steps ...Step) *Scripted {
	return &Scripted{t: t, steps: slices.Clone(steps)}
}

// Append adds steps after the existing ones.
func (s *Scripted) Append(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

// Generate plays the next step.
func (s *Scripted) Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, cloneRequest(req))
	n := s.next
	if n >= len(s.steps) {
		total := len(s.steps)
		s.mu.Unlock()
		s.t.Errorf("llmtest: unexpected model call #%d (only %d scripted); last message: %q", n+1, total, lastText(req))
		return llm.Response{}, fmt.Errorf("%w: call #%d, only %d scripted", ErrUnscripted, n+1, total)
	}
	step := s.steps[n]
	s.next++
	s.mu.Unlock()

	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	if step.Check != nil {
		if err := step.Check(req); err != nil {
			s.t.Errorf("llmtest: model call #%d: request check failed: %v", n+1, err)
			return llm.Response{}, fmt.Errorf("llmtest: model call #%d: request check: %w", n+1, err)
		}
	}
	if step.Err != nil {
		return llm.Response{}, step.Err
	}
	resp := step.response(n + 1)
	if stream != nil {
		Emit(resp, stream)
	}
	return resp, nil
}

// Requests returns every request received so far, in order.
func (s *Scripted) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Calls is how many times Generate was called.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// AssertDone fails the test when some steps were not used.
func (s *Scripted) AssertDone() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next < len(s.steps) {
		s.t.Errorf("llmtest: %d of %d scripted model calls not made", len(s.steps)-s.next, len(s.steps))
	}
}

// Func adapts a function into a model for dynamic fakes. When streaming, the
// returned response is delivered through Emit.
type Func func(ctx context.Context, req llm.Request) (llm.Response, error)

// Generate calls f.
func (f Func) Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	resp, err := f(ctx, req)
	if err != nil {
		return llm.Response{}, err
	}
	resp = complete(resp)
	if stream != nil {
		Emit(resp, stream)
	}
	return resp, nil
}

// Emit delivers resp as a provider would stream it: the text in several
// deltas, each tool call as a first delta carrying its index, ID and name and
// then its arguments in several pieces, then a usage event and a done event
// carrying resp. Thinking comes first, in deltas of its own.
func Emit(resp llm.Response, stream llm.StreamFunc) {
	for _, piece := range Split(resp.Message.Thinking(), 3) {
		stream(llm.Event{Kind: llm.EventThinkingDelta, Text: piece})
	}
	for _, piece := range Split(resp.Message.Text(), 3) {
		stream(llm.Event{Kind: llm.EventTextDelta, Text: piece})
	}
	for i, c := range resp.Message.ToolCalls() {
		stream(llm.Event{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name}})
		for _, piece := range Split(string(c.Arguments), 3) {
			stream(llm.Event{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: i, ArgumentsDelta: piece}})
		}
	}
	stream(llm.Event{Kind: llm.EventUsage, Usage: resp.Usage})
	r := resp
	stream(llm.Event{Kind: llm.EventDone, Response: &r})
}

// Split cuts s into at most n non-empty pieces of nearly equal rune length,
// never inside a UTF-8 sequence. An empty s gives no pieces.
func Split(s string, n int) []string {
	if s == "" {
		return nil
	}
	count := utf8.RuneCountInString(s)
	n = max(1, min(n, count))
	out := make([]string, 0, n)
	size, rest := count/n, count%n
	for i := 0; i < n; i++ {
		k := size
		if i < rest {
			k++
		}
		end := 0
		for j := 0; j < k; j++ {
			_, w := utf8.DecodeRuneInString(s[end:])
			end += w
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func cloneRequest(req llm.Request) llm.Request {
	req.Messages = slices.Clone(req.Messages)
	for i := range req.Messages {
		req.Messages[i].Parts = slices.Clone(req.Messages[i].Parts)
	}
	req.Tools = slices.Clone(req.Tools)
	return req
}

func lastText(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if t := req.Messages[i].Text(); t != "" {
			return t
		}
	}
	return ""
}
