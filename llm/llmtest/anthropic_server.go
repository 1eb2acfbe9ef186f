package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/reverie-ai/reverie/llm"
)

// MessagesRequest is an Anthropic messages request as received on the wire.
type MessagesRequest struct {
	Model       string               `json:"model"`
	MaxTokens   int                  `json:"max_tokens"`
	System      json.RawMessage      `json:"system,omitempty"`
	Messages    []AnthropicMessage   `json:"messages"`
	Tools       []AnthropicTool      `json:"tools,omitempty"`
	ToolChoice  *AnthropicToolChoice `json:"tool_choice,omitempty"`
	Stream      bool                 `json:"stream,omitempty"`
	Temperature *float64             `json:"temperature,omitempty"`
}

// SystemText returns the system prompt, whether sent as a string or blocks.
func (r MessagesRequest) SystemText() string {
	var s string
	if json.Unmarshal(r.System, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	_ = json.Unmarshal(r.System, &blocks)
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// AnthropicMessage is one message of a MessagesRequest. String content is
// decoded as one text block.
type AnthropicMessage struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// UnmarshalJSON accepts content as a string or a list of blocks.
func (m *AnthropicMessage) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []ContentBlock{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// ContentBlock is a content block of an AnthropicMessage.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Thinking, Signature and Data are a thinking block's reasoning and
	// signature, and a redacted_thinking block's data.
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
	// Source is an image block's source.
	Source *ImageSource `json:"source,omitempty"`
	// CacheControl is the block's prompt-cache breakpoint, if any.
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// CacheControl is a block's cache_control object ({"type":"ephemeral"}).
type CacheControl struct {
	Type string `json:"type"`
}

// ImageSource is where an image block's picture comes from.
type ImageSource struct {
	Type      string `json:"type"` // "base64" or "url"
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// ResultText returns a tool_result block's content as text.
func (b ContentBlock) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	_ = json.Unmarshal(b.Content, &blocks)
	var out strings.Builder
	for _, x := range blocks {
		out.WriteString(x.Text)
	}
	return out.String()
}

// AnthropicTool is one offered tool.
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// AnthropicToolChoice is the tool_choice object.
type AnthropicToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// AnthropicServer is an httptest server speaking the Anthropic messages
// API: POST /v1/messages (JSON or the SSE event sequence message_start,
// content_block_start/delta/stop, message_delta, message_stop, with pings)
// and GET /v1/models. Replies come from the queue (Enqueue) and then from
// the handler (Handle); a call with neither fails the test.
type AnthropicServer struct {
	f *fakeServer[MessagesRequest]

	mu           sync.Mutex
	models       []string
	modelsStatus int
}

// NewAnthropicServer starts a server that is closed when the test (or other
// owner) ends.
func NewAnthropicServer(t Owner) *AnthropicServer {
	s := &AnthropicServer{models: []string{"claude-test"}}
	s.f = newFakeServer[MessagesRequest](t, http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL to configure a client with (the SDK appends /v1/…).
func (s *AnthropicServer) URL() string { return s.f.srv.URL }

// Client returns an HTTP client for the server.
func (s *AnthropicServer) Client() *http.Client { return s.f.srv.Client() }

// Enqueue adds replies for the next messages calls, in order.
func (s *AnthropicServer) Enqueue(rs ...ServerReply) { s.f.enqueue(rs...) }

// Handle sets the function answering messages calls once the queue is empty.
func (s *AnthropicServer) Handle(h func(MessagesRequest) ServerReply) { s.f.setHandler(h) }

// WaitForRequests blocks until the server has received n requests in all
// (of any kind), for tests that must act while a request is in flight.
func (s *AnthropicServer) WaitForRequests(n int) { s.f.waitFor(n) }

// Pending is the number of queued replies not yet used.
func (s *AnthropicServer) Pending() int { return s.f.pending() }

// SetModels sets the ids GET /v1/models lists.
func (s *AnthropicServer) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = slices.Clone(ids)
}

// SetModelsStatus makes GET /v1/models fail with status (0 restores it).
func (s *AnthropicServer) SetModelsStatus(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsStatus = status
}

// Requests returns every request received, in order.
func (s *AnthropicServer) Requests() []Recorded[MessagesRequest] { return s.f.recorded() }

// MessageRequests returns the decoded messages requests, in order.
func (s *AnthropicServer) MessageRequests() []MessagesRequest {
	var out []MessagesRequest
	for _, r := range s.f.recorded() {
		if strings.HasSuffix(r.Path, "/messages") {
			out = append(out, r.Decoded)
		}
	}
	return out
}

func (s *AnthropicServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		var req MessagesRequest
		if err := json.Unmarshal(body, &req); err != nil {
			s.f.record(r, body, req)
			anthropicError(w, ServerReply{Status: http.StatusBadRequest, ErrorMessage: "invalid JSON body: " + err.Error()}, "")
			return
		}
		s.f.record(r, body, req)
		s.messages(w, r, req)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.f.record(r, body, MessagesRequest{})
		s.listModels(w)
	default:
		s.f.record(r, body, MessagesRequest{})
		anthropicError(w, ServerReply{Status: http.StatusNotFound, ErrorMessage: "Not found: " + r.URL.Path}, "")
	}
}

func (s *AnthropicServer) messages(w http.ResponseWriter, r *http.Request, req MessagesRequest) {
	reply, ok := s.f.next(req)
	if !ok {
		s.f.t.Errorf("llmtest: AnthropicServer: unscripted messages call (model %q, %d messages)", req.Model, len(req.Messages))
		anthropicError(w, ServerReply{Status: http.StatusInternalServerError, ErrorMessage: "llmtest: no scripted reply"}, req.Model)
		return
	}
	if !s.f.wait(r.Context(), reply) {
		return
	}
	w.Header().Set("request-id", "req_llmtest")
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status >= 400 {
		anthropicError(w, reply, req.Model)
		return
	}
	model := reply.Model
	if model == "" {
		model = req.Model
	}
	s.f.mu.Lock()
	seq := s.f.seq
	s.f.mu.Unlock()
	calls := toolCallsWithIDs(reply.ToolCalls, "toolu_", seq)
	id := fmt.Sprintf("msg_%d", seq)
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(calls) > 0 {
			stop = "tool_use"
		}
	}
	if req.Stream {
		s.stream(w, r, reply, id, model, calls, stop)
		return
	}
	if reply.Garbage {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id": "msg_broken", "content": [`)
		return
	}
	var content []any
	if reply.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": reply.Thinking, "signature": reply.thinkingSignature()})
	}
	if reply.RedactedThinking != "" {
		content = append(content, map[string]any{"type": "redacted_thinking", "data": reply.RedactedThinking})
	}
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for _, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Arguments})
	}
	if content == nil {
		content = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": anthropicUsage(reply, reply.Usage.OutputTokens),
	})
}

func anthropicUsage(r ServerReply, output int) map[string]any {
	return map[string]any{
		"input_tokens":                r.Usage.InputTokens - r.Usage.CacheReadTokens,
		"cache_read_input_tokens":     r.Usage.CacheReadTokens,
		"cache_creation_input_tokens": 0,
		"output_tokens":               output,
	}
}

func (s *AnthropicServer) stream(w http.ResponseWriter, r *http.Request, reply ServerReply, id, model string, calls []llm.ToolCall, stop string) {
	ev := s.f.startSSE(w, r, reply)
	ev.fail = func(ev *sse) {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": reply.StreamError, "message": "Overloaded"}})
		ev.raw("error", string(b))
	}
	if reply.Garbage {
		ev.send("message_start", `{"type": "message_start", "message": {"id": "msg_broken", "content": [`)
		return
	}
	start := map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(reply, 1),
	}}
	if !ev.json("message_start", start) {
		return
	}
	index := 0
	if reply.Thinking != "" {
		if !ev.json("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}) {
			return
		}
		for _, piece := range Split(reply.Thinking, reply.chunks()) {
			if !ev.json("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "thinking_delta", "thinking": piece}}) {
				return
			}
		}
		if !ev.json("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "signature_delta", "signature": reply.thinkingSignature()}}) {
			return
		}
		if !ev.json("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
		if !s.f.hold(r.Context(), reply.ThinkingGate) {
			return
		}
	}
	if reply.RedactedThinking != "" {
		if !ev.json("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "redacted_thinking", "data": reply.RedactedThinking}}) {
			return
		}
		if !ev.json("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	if reply.Text != "" {
		if !ev.json("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}}) {
			return
		}
		if !ev.send("ping", `{"type": "ping"}`) {
			return
		}
		for i, piece := range Split(reply.Text, reply.chunks()) {
			if !ev.json("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": piece}}) {
				return
			}
			if i == 0 && !s.f.hold(r.Context(), reply.TextGate) {
				return
			}
		}
		if !ev.json("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	for _, c := range calls {
		if !ev.json("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}) {
			return
		}
		for _, piece := range Split(string(c.Arguments), reply.chunks()) {
			if !ev.json("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}}) {
				return
			}
		}
		if !ev.json("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	if !ev.json("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": reply.Usage.OutputTokens}}) {
		return
	}
	ev.json("message_stop", map[string]any{"type": "message_stop"})
}

func (s *AnthropicServer) listModels(w http.ResponseWriter) {
	s.mu.Lock()
	status, ids := s.modelsStatus, slices.Clone(s.models)
	s.mu.Unlock()
	if status >= 400 {
		anthropicError(w, ServerReply{Status: status}, "")
		return
	}
	data := make([]map[string]any, len(ids))
	for i, id := range ids {
		data[i] = map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"}
	}
	first, last := "", ""
	if len(ids) > 0 {
		first, last = ids[0], ids[len(ids)-1]
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last})
}

// anthropicError writes an error in Anthropic's format:
// {"type":"error","error":{"type":…,"message":…}}.
func anthropicError(w http.ResponseWriter, r ServerReply, model string) {
	typ, msg := "api_error", "Internal server error"
	switch r.Status {
	case http.StatusBadRequest:
		typ, msg = "invalid_request_error", "Invalid request"
	case http.StatusUnauthorized:
		typ, msg = "authentication_error", "invalid x-api-key"
	case http.StatusForbidden:
		typ, msg = "permission_error", "Your API key does not have permission to use the specified resource."
	case http.StatusNotFound:
		typ, msg = "not_found_error", "model: "+model
	case http.StatusRequestEntityTooLarge:
		typ, msg = "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case http.StatusTooManyRequests:
		typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
	case 529:
		typ, msg = "overloaded_error", "Overloaded"
	}
	if r.ErrorType != "" {
		typ = r.ErrorType
	}
	if r.ErrorMessage != "" {
		msg = r.ErrorMessage
	}
	writeJSON(w, r.Status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_llmtest"})
}
