package openai

import (
	"encoding/json"

	sdk "github.com/openai/openai-go/v3"

	"github.com/reverie-ai/reverie/internal/providers"
)

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
	if p, err := c.params(providers.WarmRequest, c.o.Model); err == nil {
		_, _ = json.Marshal(p)
	}
	var cc sdk.ChatCompletion
	if json.Unmarshal([]byte(warmCompletion), &cc) == nil {
		_, _ = fromCompletion(&cc)
	}
	var chunk sdk.ChatCompletionChunk
	_ = json.Unmarshal([]byte(warmChunk), &chunk)
}
