package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/reverie-ai/reverie/llm"
)

func chunkOf(t *testing.T, s string) sdk.ChatCompletionChunk {
	t.Helper()
	var c sdk.ChatCompletionChunk
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
