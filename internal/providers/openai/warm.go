package openai

import (
	"encoding/json"

	sdk "github.com/openai/openai-go/v3"

	"github.com/reverie-ai/reverie/llm"
)

// warmRequest has every message role and part a turn sends, and a tool.
var warmRequest = llm.Request{
	System: "s",
	Messages: []llm.Message{
		llm.UserText("u"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text{Text: "a"},
			llm.ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{"q":"x"}`)}}},
		{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "c", Name: "t", Content: "r"}}},
	},
	Tools: []llm.ToolSpec{{Name: "t", Description: "d",
		Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}},
}

// warmCompletion and warmChunk are a reply with a tool call, whole and
// streamed.
const (
	warmCompletion = `{"id":"w","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"a","tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":"{}"}}]},` +
		`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	warmChunk = `{"id":"w","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,` +
		`"delta":{"role":"assistant","content":"a","tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"t","arguments":"{}"}}]},` +
		`"finish_reason":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
)

// Warm builds what the first request would otherwise build on its path: the
// SDK encodes parameters and decodes replies by reflection, preparing each
// type's codec on first use (~2 ms for a chat request and its reply). It
// encodes a request and decodes a reply of every shape a turn uses, and
// sends nothing. Safe to call beside requests.
func (c *Client) Warm() {
	if p, err := c.params(warmRequest, c.o.Model); err == nil {
		_, _ = json.Marshal(p)
	}
	var cc sdk.ChatCompletion
	if json.Unmarshal([]byte(warmCompletion), &cc) == nil {
		_, _ = fromCompletion(&cc)
	}
	var chunk sdk.ChatCompletionChunk
	_ = json.Unmarshal([]byte(warmChunk), &chunk)
}
