package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/llm"
)

// ChatRequest is an OpenAI chat-completions request as received on the wire.
type ChatRequest struct {
	Model               string              `json:"model"`
	Messages            []ChatMessage       `json:"messages"`
	Tools               []ChatTool          `json:"tools,omitempty"`
	ToolChoice          json.RawMessage     `json:"tool_choice,omitempty"`
	ResponseFormat      *ChatResponseFormat `json:"response_format,omitempty"`
	Stream              bool                `json:"stream,omitempty"`
	StreamOptions       *ChatStreamOptions  `json:"stream_options,omitempty"`
	MaxTokens           *int                `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int                `json:"max_completion_tokens,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
}

// ChatStreamOptions is the stream_options object.
type ChatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatMessage is one message of a ChatRequest.
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []ChatToolCall  `json:"tool_calls,omitempty"`
}

// Text returns the message content, whether sent as a string or as text parts.
func (m ChatMessage) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Images returns the URLs of the message's image_url parts in order (data:
// URLs for inline images); nil when the content is a plain string.
func (m ChatMessage) Images() []string {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		if p.Type == "image_url" {
			out = append(out, p.ImageURL.URL)
		}
	}
	return out
}

// ChatToolCall is a tool call inside an assistant ChatMessage.
type ChatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function ChatFunctionCall `json:"function"`
}

// ChatFunctionCall is the function of a ChatToolCall.
type ChatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatTool is one offered tool.
type ChatTool struct {
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatFunction describes a function tool.
type ChatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ChatResponseFormat is the response_format object.
type ChatResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *ChatJSONSchema `json:"json_schema,omitempty"`
}

// ChatJSONSchema is the json_schema of a ChatResponseFormat.
type ChatJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict *bool           `json:"strict,omitempty"`
}

// EmbeddingsRequest is an OpenAI embeddings request as received on the wire.
type EmbeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     int             `json:"dimensions,omitempty"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
}

// Texts returns the input as a list of strings.
func (r EmbeddingsRequest) Texts() []string {
	var one string
	if json.Unmarshal(r.Input, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(r.Input, &many)
	return many
}

// OpenAIRequest is one request an OpenAIServer received. Decoded holds the
// chat-completions request; Embeddings is set for /embeddings calls.
type OpenAIRequest struct {
	Recorded[ChatRequest]
	Embeddings *EmbeddingsRequest
}

// OpenAIServer is an httptest server speaking the OpenAI API: POST
// /v1/chat/completions (JSON or SSE stream), GET /v1/models and POST
// /v1/embeddings (deterministic vectors, see FakeEmbedding). Paths without
// the /v1 prefix are accepted too. Chat replies come from the queue (Enqueue)
// and then from the handler (Handle); a call with neither fails the test.
type OpenAIServer struct {
	f *fakeServer[ChatRequest]

	mu              sync.Mutex
	embeds          map[int]*EmbeddingsRequest
	models          []string
	modelsStatus    int
	embedDims       int
	reverseEmbed    bool
	embeddingStatus []ServerReply
	inputLimit      int
}

// NewOpenAIServer starts a server that is closed when the test (or other
// owner) ends.
func NewOpenAIServer(t Owner) *OpenAIServer {
	s := &OpenAIServer{embeds: map[int]*EmbeddingsRequest{}, models: []string{"gpt-test"}, embedDims: 8}
	s.f = newFakeServer[ChatRequest](t, http.HandlerFunc(s.serve))
	return s
}

// URL is the server's root URL.
func (s *OpenAIServer) URL() string { return s.f.srv.URL }

// BaseURL is the API base URL to configure a client with (URL + "/v1").
func (s *OpenAIServer) BaseURL() string { return s.f.srv.URL + "/v1" }

// Client returns an HTTP client for the server.
func (s *OpenAIServer) Client() *http.Client { return s.f.srv.Client() }

// Enqueue adds replies for the next chat-completions calls, in order.
func (s *OpenAIServer) Enqueue(rs ...ServerReply) { s.f.enqueue(rs...) }

// Handle sets the function answering chat calls once the queue is empty.
func (s *OpenAIServer) Handle(h func(ChatRequest) ServerReply) { s.f.setHandler(h) }

// WaitForRequests blocks until the server has received n requests in all
// (of any kind), for tests that must act while a request is in flight.
func (s *OpenAIServer) WaitForRequests(n int) { s.f.waitFor(n) }

// DiscardRequests stops recording requests (Requests and the like stay
// empty; WaitForRequests still counts them), for long runs such as load
// benchmarks that would otherwise keep every request body.
func (s *OpenAIServer) DiscardRequests() { s.f.setDiscard(true) }

// Pending is the number of queued replies not yet used.
func (s *OpenAIServer) Pending() int { return s.f.pending() }

// SetModels sets the ids GET /v1/models lists.
func (s *OpenAIServer) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = slices.Clone(ids)
}

// SetModelsStatus makes GET /v1/models fail with status (0 restores it).
func (s *OpenAIServer) SetModelsStatus(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsStatus = status
}

// SetEmbeddingDimensions sets the vector size used when a request does not
// ask for one (default 8).
func (s *OpenAIServer) SetEmbeddingDimensions(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedDims = n
}

// SetEmbeddingInputLimit makes /embeddings refuse a request holding a text
// of more than n tokens (whitespace-separated words here) with HTTP 400, as
// OpenAI does for an input above the model's context ("Invalid
// 'input[3]': maximum input length is 8192 tokens."); 0 lifts the limit.
func (s *OpenAIServer) SetEmbeddingInputLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inputLimit = n
}

// ReverseEmbeddings makes /embeddings list its results in reverse order
// (each still carrying its index), as servers are allowed to.
func (s *OpenAIServer) ReverseEmbeddings(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reverseEmbed = on
}

// EnqueueEmbeddingFailure makes the next /embeddings call answer with the
// reply's error Status (and Retry-After).
func (s *OpenAIServer) EnqueueEmbeddingFailure(r ServerReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embeddingStatus = append(s.embeddingStatus, r)
}

// Requests returns every request received, in order.
func (s *OpenAIServer) Requests() []OpenAIRequest {
	rec := s.f.recorded()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]OpenAIRequest, len(rec))
	for i, r := range rec {
		out[i] = OpenAIRequest{Recorded: r, Embeddings: s.embeds[i+1]}
	}
	return out
}

// ChatRequests returns the decoded chat-completions requests, in order.
func (s *OpenAIServer) ChatRequests() []ChatRequest {
	var out []ChatRequest
	for _, r := range s.f.recorded() {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			out = append(out, r.Decoded)
		}
	}
	return out
}

// EmbeddingRequests returns the decoded embeddings requests, in order.
func (s *OpenAIServer) EmbeddingRequests() []EmbeddingsRequest {
	var out []EmbeddingsRequest
	for _, r := range s.Requests() {
		if r.Embeddings != nil {
			out = append(out, *r.Embeddings)
		}
	}
	return out
}

func (s *OpenAIServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && path == "/chat/completions":
		var req ChatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			s.f.record(r, body, req)
			openAIError(w, ServerReply{Status: http.StatusBadRequest, ErrorMessage: "invalid JSON body: " + err.Error()}, "")
			return
		}
		s.f.record(r, body, req)
		s.chat(w, r, req)
	case r.Method == http.MethodGet && path == "/models":
		s.f.record(r, body, ChatRequest{})
		s.listModels(w)
	case r.Method == http.MethodPost && path == "/embeddings":
		var req EmbeddingsRequest
		err := json.Unmarshal(body, &req)
		seq := s.f.record(r, body, ChatRequest{})
		if err != nil {
			openAIError(w, ServerReply{Status: http.StatusBadRequest, ErrorMessage: "invalid JSON body: " + err.Error()}, "")
			return
		}
		s.mu.Lock()
		s.embeds[seq] = &req
		s.mu.Unlock()
		s.embed(w, req)
	default:
		s.f.record(r, body, ChatRequest{})
		openAIError(w, ServerReply{Status: http.StatusNotFound, ErrorMessage: "unknown endpoint " + r.Method + " " + r.URL.Path}, "")
	}
}

func (s *OpenAIServer) chat(w http.ResponseWriter, r *http.Request, req ChatRequest) {
	reply, ok := s.f.next(req)
	if !ok {
		s.f.t.Errorf("llmtest: OpenAIServer: unscripted chat completion (model %q, %d messages)", req.Model, len(req.Messages))
		openAIError(w, ServerReply{Status: http.StatusInternalServerError, ErrorMessage: "llmtest: no scripted reply"}, req.Model)
		return
	}
	if !s.f.wait(r.Context(), reply) {
		return
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status >= 400 {
		openAIError(w, reply, req.Model)
		return
	}
	model := reply.Model
	if model == "" {
		model = req.Model
	}
	s.f.mu.Lock()
	seq := s.f.seq
	s.f.mu.Unlock()
	calls := toolCallsWithIDs(reply.ToolCalls, "call_", seq)
	id := fmt.Sprintf("chatcmpl-%d", seq)
	finish := reply.StopReason
	if finish == "" {
		finish = "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
	}
	if req.Stream {
		s.stream(w, r, req, reply, id, model, calls, finish)
		return
	}
	if reply.Garbage {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `<html><body>502 Bad Gateway</body></html>`)
		return
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if reply.Text != "" || len(calls) == 0 {
		msg["content"] = reply.Text
	}
	if reply.Thinking != "" {
		msg[reply.thinkingField()] = reply.Thinking
	}
	if len(calls) > 0 {
		tcs := make([]map[string]any, len(calls))
		for i, c := range calls {
			tcs[i] = map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": string(c.Arguments)}}
		}
		msg["tool_calls"] = tcs
	}
	choices := []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}}
	if reply.EmptyChoices {
		choices = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": choices, "usage": openAIUsage(reply), "system_fingerprint": "fp_llmtest",
	})
}

func openAIUsage(r ServerReply) map[string]any {
	return map[string]any{
		"prompt_tokens":         r.Usage.InputTokens,
		"completion_tokens":     r.Usage.OutputTokens,
		"total_tokens":          r.Usage.InputTokens + r.Usage.OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": r.Usage.CacheReadTokens},
	}
}

func (s *OpenAIServer) stream(w http.ResponseWriter, r *http.Request, req ChatRequest, reply ServerReply,
	id, model string, calls []llm.ToolCall, finish string) {
	ev := s.f.startSSE(w, r, reply)
	ev.fail = func(ev *sse) {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": "The server had an error while processing your request.", "type": reply.StreamError, "param": nil, "code": nil}})
		ev.raw("", string(b))
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	chunk := func(delta map[string]any, finishReason any) map[string]any {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"system_fingerprint": "fp_llmtest",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finishReason}},
		}
		if includeUsage {
			c["usage"] = nil
		}
		return c
	}
	if reply.Garbage {
		if ev.send("", `{"id": "chatcmpl-broken", "choices": [{"delta": {"content": "hel`) {
			ev.send("", "[DONE]")
		}
		return
	}
	if reply.EmptyChoices {
		c := chunk(map[string]any{}, nil)
		c["choices"] = []any{}
		if ev.json("", c) {
			ev.send("", "[DONE]")
		}
		return
	}
	if !ev.json("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, piece := range Split(reply.Thinking, reply.chunks()) {
		if !ev.json("", chunk(map[string]any{reply.thinkingField(): piece, "content": nil}, nil)) {
			return
		}
	}
	if !s.f.hold(r.Context(), reply.ThinkingGate) {
		return
	}
	for i, piece := range Split(reply.Text, reply.chunks()) {
		if !ev.json("", chunk(map[string]any{"content": piece}, nil)) {
			return
		}
		if i == 0 && !s.f.hold(r.Context(), reply.TextGate) {
			return
		}
	}
	for _, d := range openAIToolDeltas(calls, reply.chunks(), reply.Interleave) {
		if !ev.json("", chunk(map[string]any{"tool_calls": []any{d}}, nil)) {
			return
		}
	}
	if !ev.json("", chunk(map[string]any{}, finish)) {
		return
	}
	if includeUsage {
		c := chunk(nil, nil)
		c["choices"] = []any{}
		c["usage"] = openAIUsage(reply)
		if !ev.json("", c) {
			return
		}
	}
	ev.send("", "[DONE]")
}

// openAIToolDeltas splits tool calls into wire deltas: a first delta with
// index, id, type and name, then the arguments in n pieces; interleaved
// round-robin across calls when asked.
func openAIToolDeltas(calls []llm.ToolCall, n int, interleave bool) []map[string]any {
	per := make([][]map[string]any, len(calls))
	for i, c := range calls {
		per[i] = append(per[i], map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}})
		for _, p := range Split(string(c.Arguments), n) {
			per[i] = append(per[i], map[string]any{"index": i, "function": map[string]any{"arguments": p}})
		}
	}
	var out []map[string]any
	if !interleave {
		for _, p := range per {
			out = append(out, p...)
		}
		return out
	}
	for k := 0; ; k++ {
		added := false
		for _, p := range per {
			if k < len(p) {
				out = append(out, p[k])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

func (s *OpenAIServer) listModels(w http.ResponseWriter) {
	s.mu.Lock()
	status, ids := s.modelsStatus, slices.Clone(s.models)
	s.mu.Unlock()
	if status >= 400 {
		openAIError(w, ServerReply{Status: status}, "")
		return
	}
	data := make([]map[string]any, len(ids))
	for i, id := range ids {
		data[i] = map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "llmtest"}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *OpenAIServer) embed(w http.ResponseWriter, req EmbeddingsRequest) {
	s.mu.Lock()
	dims, reverse, limit := s.embedDims, s.reverseEmbed, s.inputLimit
	var fail *ServerReply
	if len(s.embeddingStatus) > 0 {
		fail = &s.embeddingStatus[0]
		s.embeddingStatus = s.embeddingStatus[1:]
	}
	s.mu.Unlock()
	if fail != nil {
		if fail.RetryAfter != "" {
			w.Header().Set("Retry-After", fail.RetryAfter)
		}
		openAIError(w, *fail, req.Model)
		return
	}
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	texts := req.Texts()
	for i, text := range texts {
		if limit > 0 && len(strings.Fields(text)) > limit {
			openAIError(w, ServerReply{Status: http.StatusBadRequest,
				ErrorMessage: fmt.Sprintf("Invalid 'input[%d]': maximum input length is %d tokens.", i, limit)}, req.Model)
			return
		}
	}
	data := make([]map[string]any, len(texts))
	tokens := 0
	for i, text := range texts {
		vec := FakeEmbedding(text, dims)
		tokens += len(strings.Fields(text))
		var emb any = vec
		if req.EncodingFormat == "base64" {
			var buf bytes.Buffer
			_ = binary.Write(&buf, binary.LittleEndian, vec)
			emb = base64.StdEncoding.EncodeToString(buf.Bytes())
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	if reverse {
		slices.Reverse(data)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

// FakeEmbedding is the deterministic unit vector the fake servers return for
// text: the same text always gives the same vector.
func FakeEmbedding(text string, dims int) []float32 {
	if dims <= 0 {
		dims = 8
	}
	h := fnv.New64a()
	_, _ = io.WriteString(h, text)
	state := h.Sum64() | 1
	vec := make([]float32, dims)
	var norm float64
	for i := range vec {
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		v := float64(int64(state%2001)-1000) / 1000
		vec[i] = float32(v)
		norm += v * v
	}
	if norm == 0 {
		vec[0], norm = 1, 1
	}
	inv := 1 / math.Sqrt(norm)
	for i := range vec {
		vec[i] = float32(float64(vec[i]) * inv)
	}
	return vec
}

// openAIError writes an error in OpenAI's format:
// {"error":{"message":…,"type":…,"param":null,"code":…}}.
func openAIError(w http.ResponseWriter, r ServerReply, model string) {
	typ, code, msg := "server_error", any(nil), "The server had an error while processing your request."
	switch r.Status {
	case http.StatusBadRequest:
		typ, code, msg = "invalid_request_error", nil, "Invalid request."
	case http.StatusUnauthorized:
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case http.StatusForbidden:
		typ, code, msg = "invalid_request_error", "unsupported_country_region_territory", "Access denied."
	case http.StatusNotFound:
		typ, code, msg = "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)
	case http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."
	}
	if r.ErrorType != "" {
		typ = r.ErrorType
	}
	if r.ErrorMessage != "" {
		msg = r.ErrorMessage
	}
	writeJSON(w, r.Status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}
