package providers

import (
	"encoding/json"

	"github.com/reverie-ai/reverie/llm"
)

// WarmRequest has every message role and part a turn sends, and a tool:
// what a client's Warm encodes (never sent) so that the SDK prepares its
// codecs off the first request's path.
var WarmRequest = llm.Request{
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
