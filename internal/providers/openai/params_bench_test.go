package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/reverie-ai/reverie/llm"
)

// benchRequest is a turn-shaped request: a system prompt, a short exchange
// and thirty tools with schemas the size of the core tools'.
func benchRequest() llm.Request {
	req := llm.Request{System: strings.Repeat("You are a careful assistant. ", 150), Messages: []llm.Message{llm.UserText("what is on my list today?")}}
	for i := range 30 {
		req.Tools = append(req.Tools, llm.ToolSpec{Name: fmt.Sprintf("tool_%d", i), Description: "Does one thing well, with care.",
			Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{` +
				`"path":{"type":"string","description":"File to read, relative to the workspace."},` +
				`"offset":{"type":"integer","minimum":0,"description":"First line to read."},` +
				`"limit":{"type":"integer","minimum":1,"maximum":2000,"description":"How many lines."},` +
				`"mode":{"type":"string","enum":["text","lines","bytes"],"description":"How to read."},` +
				`"filter":{"type":"object","properties":{"match":{"type":"string"},"case":{"type":"boolean"}}}}}`)})
	}
	return req
}

// BenchmarkRequestBody measures building and encoding a request body: the
// per-request cost of mapping the messages and the tools. The body is
// encoded as a request sends it (request.body).
func BenchmarkRequestBody(b *testing.B) { benchBody(b, benchRequest()) }

// benchBody builds and encodes req's body b.N times.
func benchBody(b *testing.B, req llm.Request) {
	c, err := New(Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.params(req, "m")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.body(); err != nil {
			b.Fatal(err)
		}
	}
}

// A tool's schema reaches the body as it was given (the same JSON value),
// from any number of requests at once sharing the cached map.
func TestToolSchemaInBody(t *testing.T) {
	c, err := New(Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	req := benchRequest()
	var want any
	if err := json.Unmarshal(req.Tools[0].Parameters, &want); err != nil {
		t.Fatal(err)
	}
	bodies := make(chan []byte, 8)
	for range 8 {
		go func() {
			r, err := c.params(req, "m")
			if err != nil {
				t.Error(err)
			}
			b, err := r.body()
			if err != nil {
				t.Error(err)
			}
			bodies <- b
		}()
	}
	for range 8 {
		var body struct {
			Tools []struct {
				Function struct {
					Parameters any `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(<-bodies, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Tools) != len(req.Tools) || !reflect.DeepEqual(body.Tools[0].Function.Parameters, want) {
			t.Fatalf("tool parameters in the body = %v, want %v", body.Tools, want)
		}
	}
	if _, err := c.tools.encoded(llm.ToolSpec{Name: "broken", Parameters: json.RawMessage(`[1`)}); err == nil {
		t.Error("a broken schema was accepted")
	}
	// A tool whose description or schema changes under the same name is
	// encoded afresh, and its schema kept as it was given, not as the
	// caller's slice later holds.
	spec := llm.ToolSpec{Name: "tool_0", Description: "Now does two things.", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
	for _, s := range []llm.ToolSpec{spec, {Name: "tool_0", Description: spec.Description, Parameters: json.RawMessage(`{"type":"object"}`)}} {
		enc, err := c.tools.encoded(s)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Function struct {
				Description string `json:"description"`
				Parameters  any    `json:"parameters"`
			} `json:"function"`
		}
		var want any
		if err := errors.Join(json.Unmarshal(enc, &got), json.Unmarshal(s.Parameters, &want)); err != nil {
			t.Fatal(err)
		}
		if got.Function.Description != s.Description || !reflect.DeepEqual(got.Function.Parameters, want) {
			t.Errorf("tool_0 after its change = %s", enc)
		}
		copy(s.Parameters, `{"type":"object","properties":{"x"`) // the caller reuses its buffer
	}
}

// The body, with the tools' definitions encoded once and added to the
// parameters' encoding, is the JSON value the SDK makes of the parameters
// with the tools among them.
func TestRequestBodyIsTheSDKs(t *testing.T) {
	c, err := New(Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", MaxTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	withTools := benchRequest()
	withTools.System = "Be brief. <b>HTML</b> & \"quotes\", a back\\slash, a tab\t, a line\n, a return\r, controls \x00\x01\b\f\x1f\x7f, \u2028, \u2029, é ✓ 😀 and invalid \xff UTF-8 \xe2\x82."
	withTools.Messages = append(benchHistory(12),
		llm.UserText("a question with <html> & \"quotes\" and \xfe"),
		llm.Message{Role: llm.RoleUser, Parts: []llm.Part{llm.Text{Text: "look:"}, llm.Image{MediaType: "image/png", Data: []byte("\x89PNG")}}},
		llm.AssistantText("an answer\nover two lines"),
		llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text{Text: "calling"}, llm.ToolCall{ID: "c9", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}}},
		llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "c9", Name: "read_file", Content: "<contents> & more"}}},
		llm.UserText("thanks"))
	withTools.Tools = append(withTools.Tools,
		llm.ToolSpec{Name: "no_schema"},
		llm.ToolSpec{Name: "spaced", Description: "Schema \"with\" spaces <&>.", Parameters: json.RawMessage(" {\n \"type\" : \"object\", \"properties\" : { \"q\" : {\"type\":\"string\"} } }\n")})
	required := withTools
	required.ToolChoice = llm.ToolChoiceRequired
	noTools := withTools
	noTools.Tools = nil
	format := noTools
	format.ResponseFormat = &llm.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`), Strict: true}
	for _, tc := range []struct {
		name string
		req  llm.Request
	}{
		{"tools", withTools},
		{"tool choice required", required},
		{"no tools", noTools},
		{"response format", format},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.params(tc.req, "m")
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.body()
			if err != nil {
				t.Fatal(err)
			}
			// the parameters as the SDK encodes them with the tools among them
			p := r.params
			for _, tool := range tc.req.Tools {
				schema, err := schemaObject(tool.Parameters)
				if err != nil {
					t.Fatal(err)
				}
				def := shared.FunctionDefinitionParam{Name: tool.Name, Parameters: shared.FunctionParameters(schema)}
				if tool.Description != "" {
					def.Description = sdk.String(tool.Description)
				}
				p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
			}
			want, err := p.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, got)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("body differs from the SDK's encoding:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// BenchmarkRequestBodyHistory is BenchmarkRequestBody with a thread's
// history of 100 messages: user and assistant text, tool calls and results.
func BenchmarkRequestBodyHistory(b *testing.B) {
	req := benchRequest()
	req.Messages = benchHistory(100)
	benchBody(b, req)
}

// benchHistory is n messages of a thread, a quarter of them tool use.
func benchHistory(n int) []llm.Message {
	var ms []llm.Message
	for i := 0; len(ms) < n; i++ {
		ms = append(ms, llm.UserText(fmt.Sprintf("Message %d: could you look at the notes from yesterday and tell me what is still open?", i)))
		if i%2 == 0 {
			ms = append(ms,
				llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "read_file", Arguments: json.RawMessage(`{"path":"notes/yesterday.md"}`)}}},
				llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: fmt.Sprintf("call_%d", i), Name: "read_file", Content: strings.Repeat("- an open item from the notes\n", 12)}}})
		}
		ms = append(ms, llm.AssistantText(strings.Repeat("Here is what is still open, with what each item waits for. ", 6)))
	}
	return ms[:n]
}
