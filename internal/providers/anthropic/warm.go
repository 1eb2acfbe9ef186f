package anthropic

import (
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/reverie-ai/reverie/internal/providers"
)

// warmMessage and warmEvent are a reply with a tool call, whole and one
// streamed event of it.
const (
	warmMessage = `{"id":"w","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"a"},` +
		`{"type":"tool_use","id":"c","name":"t","input":{}}],"stop_reason":"tool_use","stop_sequence":null,` +
		`"usage":{"input_tokens":1,"output_tokens":1}}`
	warmEvent = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`
)

// Warm builds what the first request would otherwise build on its path: the
// SDK encodes parameters and decodes replies by reflection, preparing each
// type's codec on first use. It encodes a request and decodes a reply of
// every shape a turn uses, and sends nothing. Safe to call beside requests.
func (c *Client) Warm() {
	if p, _, err := c.params(providers.WarmRequest, c.o.Model); err == nil {
		_, _ = json.Marshal(p)
	}
	var m sdk.Message
	if json.Unmarshal([]byte(warmMessage), &m) == nil {
		_, _ = fromMessage(&m, structuredTool{})
	}
	var ev sdk.MessageStreamEventUnion
	_ = json.Unmarshal([]byte(warmEvent), &ev)
}
