package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/reverie-ai/reverie/llm"
)

func chunkOf(t *testing.T, s string) chunk {
	t.Helper()
	var c chunk
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatalf("chunk %s: %v", s, err)
	}
	return c
}

func TestAccumulatorToolCalls(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []llm.ToolCall
	}{
		{
			name: "every call numbered 0, told apart by id",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"one","arguments":"{\"x\""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"two","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			},
			want: []llm.ToolCall{
				{ID: "a", Name: "one", Arguments: json.RawMessage(`{"x":1}`)},
				{ID: "b", Name: "two", Arguments: json.RawMessage(`{}`)},
			},
		},
		{
			name: "id repeated on every chunk",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"one","arguments":"{\"q\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"one","arguments":"\"v\"}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			},
			want: []llm.ToolCall{{ID: "a", Name: "one", Arguments: json.RawMessage(`{"q":"v"}`)}},
		},
		{
			name: "two calls in one chunk, out of order indexes",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"two","arguments":""}},{"index":0,"id":"a","function":{"name":"one","arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}},{"index":1,"function":{"arguments":"{\"k\":2}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			},
			want: []llm.ToolCall{
				{ID: "b", Name: "two", Arguments: json.RawMessage(`{"k":2}`)},
				{ID: "a", Name: "one", Arguments: json.RawMessage(`{}`)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var acc accumulator
			for _, c := range tc.chunks {
				acc.add(chunkOf(t, c))
			}
			resp, err := acc.response()
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Message.ToolCalls(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("calls = %+v, want %+v", got, tc.want)
			}
			if resp.StopReason != llm.StopToolCalls {
				t.Errorf("stop = %q", resp.StopReason)
			}
		})
	}
}

func TestChunkDecoding(t *testing.T) {
	tests := []struct {
		name, data         string
		text, reasoning    string
		usage              bool
		finish, model      string
		calls, choiceIndex int
	}{
		{"text", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}`,
			"Hi", "", false, "", "m", 0, 0},
		{"a field of another type is left empty, the rest kept", `{"model":"m","choices":[{"index":0,"delta":{"content":"Hi","reasoning":{"summary":"x"}}}]}`,
			"Hi", "", false, "", "m", 0, 0},
		{"reasoning_content before reasoning", `{"choices":[{"index":0,"delta":{"reasoning":"b","reasoning_content":"a"}}]}`,
			"", "a", false, "", "", 0, 0},
		{"thinking", `{"choices":[{"index":0,"delta":{"thinking":"t","content":null}}]}`,
			"", "t", false, "", "", 0, 0},
		{"usage and finish", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
			"", "", true, "stop", "", 0, 0},
		{"a tool call", `{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
			"", "", false, "", "", 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := chunkOf(t, tc.data)
			if c.Model != tc.model || (c.Usage != nil) != tc.usage || len(c.Choices) != 1 {
				t.Fatalf("chunk = %+v", c)
			}
			ch := c.Choices[0]
			if ch.Delta.Content != tc.text || ch.Delta.reasoning() != tc.reasoning || ch.FinishReason != tc.finish ||
				len(ch.Delta.ToolCalls) != tc.calls || int(ch.Index) != tc.choiceIndex {
				t.Errorf("choice = %+v, reasoning %q", ch, ch.Delta.reasoning())
			}
		})
	}
	var c chunk
	if err := json.Unmarshal([]byte(`{"choices":[`), &c); err == nil {
		t.Error("a cut chunk decoded without an error")
	}
}

// BenchmarkChunk measures decoding one streamed text chunk: this package's
// chunk against the SDK's type (what the stream decoded before).
func BenchmarkChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764460800,"model":"gpt-test","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" a few words of the reply"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	b.Run("chunk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c chunk
			if err := json.Unmarshal(data, &c); err != nil || c.Choices[0].Delta.Content == "" {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c sdk.ChatCompletionChunk
			if err := json.Unmarshal(data, &c); err != nil || c.Choices[0].Delta.Content == "" {
				b.Fatal(err)
			}
		}
	})
}
