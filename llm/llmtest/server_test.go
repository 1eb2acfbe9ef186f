package llmtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func post(t *testing.T, c *http.Client, url, body string) *http.Response {
	t.Helper()
	res, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// sseData returns the data lines of an SSE body.
func sseData(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestOpenAIServerStreamWireFormat(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t)
	srv.Enqueue(llmtest.ServerReply{
		Text: "Hi!", Chunks: 2, Interleave: true,
		ToolCalls: []llm.ToolCall{{Name: "a", Arguments: json.RawMessage(`{"x":1}`)}, {Name: "b", Arguments: json.RawMessage(`{"y":2}`)}},
		Usage:     llm.Usage{InputTokens: 5, OutputTokens: 6},
	})
	res := post(t, srv.Client(), srv.BaseURL()+"/chat/completions",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`)
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	data := sseData(t, res.Body)
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", data[len(data)-1])
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	var text string
	var order []int
	args := map[int]string{}
	var finish string
	var usage int
	for _, d := range data[:len(data)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %q: %v", d, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object = %q", c.Object)
		}
		if c.Usage != nil {
			usage = c.Usage.PromptTokens + c.Usage.CompletionTokens
			if len(c.Choices) != 0 {
				t.Error("usage chunk carries choices")
			}
		}
		for _, ch := range c.Choices {
			text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				order = append(order, tc.Index)
				args[tc.Index] += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text != "Hi!" || finish != "tool_calls" || usage != 11 || args[0] != `{"x":1}` || args[1] != `{"y":2}` {
		t.Errorf("text %q finish %q usage %d args %v", text, finish, usage, args)
	}
	if want := []int{0, 1, 0, 1, 0, 1}; !equalInts(order, want) {
		t.Errorf("tool delta order = %v, want interleaved %v", order, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOpenAIServerErrorsAndEndpoints(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t)
	srv.Enqueue(llmtest.ServerReply{Status: 429, RetryAfter: "7"}, llmtest.ServerReply{Status: 404})
	res := post(t, srv.Client(), srv.BaseURL()+"/chat/completions", `{"model":"m","messages":[]}`)
	var body struct {
		Error struct{ Message, Type, Code string } `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "7" || body.Error.Code != "rate_limit_exceeded" {
		t.Errorf("429 reply: %d %q %+v", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	res = post(t, srv.Client(), srv.URL()+"/chat/completions", `{"model":"gpt-x","messages":[]}`)
	_ = json.NewDecoder(res.Body).Decode(&body)
	if res.StatusCode != 404 || body.Error.Code != "model_not_found" || !strings.Contains(body.Error.Message, "gpt-x") {
		t.Errorf("404 reply: %d %+v", res.StatusCode, body)
	}
	srv.SetModels("a", "b")
	res, err := srv.Client().Get(srv.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	_ = json.NewDecoder(res.Body).Decode(&models)
	if len(models.Data) != 2 || models.Data[1].ID != "b" {
		t.Errorf("models = %+v", models)
	}
	res = post(t, srv.Client(), srv.BaseURL()+"/embeddings", `{"model":"e","input":["x","y"],"dimensions":4}`)
	var emb struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	_ = json.NewDecoder(res.Body).Decode(&emb)
	if len(emb.Data) != 2 || len(emb.Data[1].Embedding) != 4 || emb.Data[1].Embedding[2] != llmtest.FakeEmbedding("y", 4)[2] {
		t.Errorf("embeddings = %+v", emb)
	}
	if got := srv.EmbeddingRequests(); len(got) != 1 || len(got[0].Texts()) != 2 {
		t.Errorf("embedding requests = %+v", got)
	}
	if got := len(srv.Requests()); got != 4 {
		t.Errorf("recorded %d requests, want 4", got)
	}
}

func TestOpenAIServerHandler(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t)
	srv.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "echo: " + req.Messages[len(req.Messages)-1].Text()}
	})
	res := post(t, srv.Client(), srv.BaseURL()+"/chat/completions",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"parts"}]}]}`)
	var cc struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	_ = json.NewDecoder(res.Body).Decode(&cc)
	if len(cc.Choices) != 1 || cc.Choices[0].Message.Content != "echo: parts" {
		t.Errorf("reply = %+v", cc)
	}
}

func TestAnthropicServerStreamGolden(t *testing.T) {
	srv := llmtest.NewAnthropicServer(t)
	srv.Enqueue(llmtest.ServerReply{
		Text: "Let me check.", Chunks: 2,
		ToolCalls: []llm.ToolCall{{ID: "toolu_fixed", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}},
		Usage:     llm.Usage{InputTokens: 20, OutputTokens: 9, CacheReadTokens: 5},
	})
	res := post(t, srv.Client(), srv.URL()+"/v1/messages",
		`{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "anthropic_stream.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("stream differs from %s:\n%s", golden, got)
	}
	reqs := srv.MessageRequests()
	if len(reqs) != 1 || reqs[0].Messages[0].Content[0].Text != "hi" || !reqs[0].Stream {
		t.Errorf("recorded = %+v", reqs)
	}
}

func TestAnthropicServerErrors(t *testing.T) {
	srv := llmtest.NewAnthropicServer(t)
	srv.Enqueue(llmtest.ServerReply{Status: 529}, llmtest.ServerReply{Status: 429, RetryAfter: "3"})
	for _, want := range []struct {
		status int
		typ    string
	}{{529, "overloaded_error"}, {429, "rate_limit_error"}} {
		res := post(t, srv.Client(), srv.URL()+"/v1/messages", `{"model":"m","max_tokens":1,"messages":[]}`)
		var body struct {
			Type  string                         `json:"type"`
			Error struct{ Type, Message string } `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		if res.StatusCode != want.status || body.Type != "error" || body.Error.Type != want.typ || body.Error.Message == "" {
			t.Errorf("reply %d %+v, want %d %s", res.StatusCode, body, want.status, want.typ)
		}
		if want.status == 429 && res.Header.Get("Retry-After") != "3" {
			t.Errorf("Retry-After = %q", res.Header.Get("Retry-After"))
		}
	}
}

func TestFakeEmbeddingIsDeterministicUnitVector(t *testing.T) {
	a, b := llmtest.FakeEmbedding("hello", 32), llmtest.FakeEmbedding("hello", 32)
	c := llmtest.FakeEmbedding("other", 32)
	var norm float64
	same := true
	for i := range a {
		norm += float64(a[i]) * float64(a[i])
		same = same && a[i] == c[i]
	}
	if !equalFloats(a, b) || same || norm < 0.999 || norm > 1.001 {
		t.Errorf("FakeEmbedding: deterministic %v, distinct %v, norm %v", equalFloats(a, b), !same, norm)
	}
}

func equalFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
