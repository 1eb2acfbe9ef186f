package openai_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reverie-ai/reverie/internal/providers/openai"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// BenchmarkGenerateStream measures one streamed completion with text and a
// tool call in 20 chunks each, through the SDK and a loopback fake server.
func BenchmarkGenerateStream(b *testing.B) {
	srv := llmtest.NewOpenAIServer(b)
	reply := llmtest.ServerReply{
		Text:      "The quick brown fox jumps over the lazy dog, again and again, for benchmarking.",
		ToolCalls: []llm.ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query":"fox behaviour","limit":10,"lang":"en"}`)}},
		Chunks:    20,
	}
	srv.Handle(func(llmtest.ChatRequest) llmtest.ServerReply { return reply })
	c, err := openai.New(openai.Options{BaseURL: srv.BaseURL(), Model: "m", HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{llm.UserText("hi")}}
	events := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Generate(context.Background(), req, func(llm.Event) { events++ }); err != nil {
			b.Fatal(err)
		}
	}
}
