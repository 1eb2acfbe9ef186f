package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/llm"
)

// ServerReply programs one response of a fake provider server
// (OpenAIServer, AnthropicServer). The zero value answers with an empty text.
type ServerReply struct {
	// Text is the reply text.
	Text string
	// Thinking is the model's reasoning, sent before the text in the wire
	// format's own place: an OpenAI-compatible server puts it in
	// ThinkingField, Anthropic in a signed thinking block.
	Thinking string
	// ThinkingField is the OpenAI-compatible message/delta field of the
	// reasoning: "reasoning_content" (the default; DeepSeek, vLLM,
	// llama.cpp) or "reasoning" (Ollama's /v1, OpenRouter).
	ThinkingField string
	// ThinkingSignature signs the Anthropic thinking block (default
	// "sig-llmtest").
	ThinkingSignature string
	// RedactedThinking adds an Anthropic redacted_thinking block holding
	// this data after the thinking block.
	RedactedThinking string
	// ToolCalls are the tool calls of the reply; calls without an ID get one.
	ToolCalls []llm.ToolCall
	// Usage is reported in the wire format's usage object.
	Usage llm.Usage
	// StopReason overrides the wire finish/stop reason ("stop", "length",
	// "end_turn", …); by default it follows the content.
	StopReason string
	// Model is reported as the answering model; default the requested one.
	Model string

	// Status, when 400 or more, answers with an error body in the provider's
	// real format instead of a reply.
	Status int
	// ErrorType and ErrorMessage fill the error body; defaults follow Status.
	ErrorType    string
	ErrorMessage string
	// RetryAfter is sent as the Retry-After header when not empty.
	RetryAfter string

	// Chunks is how many pieces the text and each tool call's arguments are
	// split into in a stream (default 3).
	Chunks int
	// Interleave streams the tool calls' argument pieces round-robin
	// (OpenAI only: Anthropic never interleaves content blocks).
	Interleave bool
	// CutAfter, when positive, ends a stream after that many events without
	// the terminal event ([DONE] / message_stop) by dropping the connection.
	CutAfter int
	// CleanCut ends the body normally at CutAfter instead of dropping the
	// connection.
	CleanCut bool
	// StreamError, when set, ends a stream after CutAfter events (0: at
	// once) with an in-stream error event of this type ("overloaded_error",
	// "server_error", …) instead of the reply.
	StreamError string
	// StallAfter, when positive, stops sending after that many stream events
	// and waits until the client goes away.
	StallAfter int
	// Garbage answers 200 with a body that is not valid JSON (or SSE events
	// whose data is not JSON).
	Garbage bool
	// EmptyChoices answers an OpenAI completion with no choices.
	EmptyChoices bool
	// FirstByteDelay waits (real time) before sending the headers; the wait
	// ends early when the client goes away.
	FirstByteDelay time.Duration
	// Gate, when set, holds the headers until it is closed or the client
	// goes away.
	Gate <-chan struct{}
	// ThinkingGate, when set, holds a stream after its thinking until it is
	// closed or the client goes away (to see reasoning shown live).
	ThinkingGate <-chan struct{}
	// TextGate, when set, holds a stream after the first piece of its
	// text until it is closed or the client goes away (to see a reply
	// shown while it streams).
	TextGate <-chan struct{}
}

func (r ServerReply) thinkingField() string {
	if r.ThinkingField == "" {
		return "reasoning_content"
	}
	return r.ThinkingField
}

func (r ServerReply) thinkingSignature() string {
	if r.ThinkingSignature == "" {
		return "sig-llmtest"
	}
	return r.ThinkingSignature
}

func (r ServerReply) chunks() int {
	if r.Chunks <= 0 {
		return 3
	}
	return r.Chunks
}

// Owner is what a fake server needs of whoever runs it: a *testing.T or
// *testing.B (any testing.TB), or a program that drives Reverie against a
// fake model (the load benchmarks under bench/). Cleanup registers the
// server's close; Errorf reports a call the server was not programmed for.
type Owner interface {
	Cleanup(func())
	Errorf(format string, args ...any)
}

// fakeServer is the machinery both fake servers share: an httptest server,
// a queue of replies, a fallback handler and request recording.
type fakeServer[Req any] struct {
	t    Owner
	srv  *httptest.Server
	done chan struct{}

	mu       sync.Mutex
	arrived  *sync.Cond
	queue    []ServerReply
	handler  func(Req) ServerReply
	requests []Recorded[Req]
	seq      int
	discard  bool // count requests without keeping them
}

// Recorded is one request a fake server received.
type Recorded[Req any] struct {
	Method string
	Path   string
	Header http.Header
	// Body is the raw request body.
	Body json.RawMessage
	// Decoded is the body decoded into the wire request type (zero for
	// requests that are not model calls).
	Decoded Req
}

func newFakeServer[Req any](t Owner, h http.Handler) *fakeServer[Req] {
	f := &fakeServer[Req]{t: t, done: make(chan struct{})}
	f.arrived = sync.NewCond(&f.mu)
	f.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		close(f.done)
		f.srv.Close()
	})
	return f
}

func (f *fakeServer[Req]) enqueue(rs ...ServerReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, rs...)
}

func (f *fakeServer[Req]) setHandler(h func(Req) ServerReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handler = h
}

func (f *fakeServer[Req]) record(r *http.Request, body []byte, decoded Req) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.discard {
		f.requests = append(f.requests, Recorded[Req]{
			Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: json.RawMessage(body), Decoded: decoded,
		})
	}
	f.seq++
	f.arrived.Broadcast()
	return f.seq
}

// waitFor blocks until n requests have arrived.
func (f *fakeServer[Req]) waitFor(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.seq < n {
		f.arrived.Wait()
	}
}

func (f *fakeServer[Req]) setDiscard(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.discard = on
}

func (f *fakeServer[Req]) recorded() []Recorded[Req] {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Recorded[Req], len(f.requests))
	copy(out, f.requests)
	return out
}

// next picks the reply for a model call: the queue first, then the handler.
// ok is false when neither has one.
func (f *fakeServer[Req]) next(req Req) (ServerReply, bool) {
	f.mu.Lock()
	if len(f.queue) > 0 {
		r := f.queue[0]
		f.queue = f.queue[1:]
		f.mu.Unlock()
		return r, true
	}
	h := f.handler
	f.mu.Unlock()
	if h == nil {
		return ServerReply{}, false
	}
	return h(req), true
}

func (f *fakeServer[Req]) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// wait holds the response until the reply's delay and gate allow it. It
// reports false when the client or the server went away meanwhile.
func (f *fakeServer[Req]) wait(ctx context.Context, r ServerReply) bool {
	if r.FirstByteDelay > 0 {
		t := time.NewTimer(r.FirstByteDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		case <-f.done:
			return false
		}
	}
	if r.Gate != nil {
		select {
		case <-r.Gate:
		case <-ctx.Done():
			return false
		case <-f.done:
			return false
		}
	}
	return true
}

// hold waits for gate (nil: not at all); false when the client went away
// first or the server closed.
func (f *fakeServer[Req]) hold(ctx context.Context, gate <-chan struct{}) bool {
	if gate == nil {
		return true
	}
	select {
	case <-gate:
		return true
	case <-ctx.Done():
	case <-f.done:
	}
	return false
}

// sse writes server-sent events, counting them for CutAfter and StallAfter.
type sse struct {
	w     http.ResponseWriter
	ctx   context.Context
	done  <-chan struct{}
	reply ServerReply
	n     int
	// fail writes the in-stream error event for reply.StreamError.
	fail func(s *sse)
}

func (f *fakeServer[Req]) startSSE(w http.ResponseWriter, r *http.Request, reply ServerReply) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush(w)
	return &sse{w: w, ctx: r.Context(), done: f.done, reply: reply}
}

// send writes one event (name may be empty) and reports whether the stream
// goes on. It drops the connection at CutAfter and blocks at StallAfter.
func (s *sse) send(name string, data string) bool {
	if s.reply.StreamError != "" && s.n >= s.reply.CutAfter {
		if s.fail != nil {
			f := s.fail
			s.fail = nil
			f(s)
		}
		return false
	}
	if s.reply.CutAfter > 0 && s.n >= s.reply.CutAfter {
		if s.reply.CleanCut {
			return false
		}
		// Drop the connection without ending the chunked body.
		panic(http.ErrAbortHandler)
	}
	if s.reply.StallAfter > 0 && s.n >= s.reply.StallAfter {
		select {
		case <-s.ctx.Done():
		case <-s.done:
		}
		return false
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	flush(s.w)
	s.n++
	return true
}

// raw writes one event bypassing the cut, stall and error rules.
func (s *sse) raw(name, data string) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	flush(s.w)
}

func (s *sse) json(name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmtest: encode event: %v", err))
	}
	return s.send(name, string(b))
}

func flush(w http.ResponseWriter) {
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// toolCallsWithIDs gives every call an ID with the given prefix.
func toolCallsWithIDs(calls []llm.ToolCall, prefix string, seq int) []llm.ToolCall {
	out := make([]llm.ToolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("%s%d_%d", prefix, seq, i+1)
		}
		if len(c.Arguments) == 0 {
			c.Arguments = json.RawMessage("{}")
		}
		out[i] = c
	}
	return out
}
