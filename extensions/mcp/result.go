package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/tool"
)

// maxResultText caps the text of one tool result handed to the model.
const maxResultText = 64 << 10

// mapResult turns an MCP tool result into the model's tool result: an
// evidence packet (kind tool_output, source the tool's name here) whose
// items are the text, then each resource (its URI, name, MIME type and
// text), then each image and audio clip described by type and size (the
// model cannot see the bytes); structured content goes into the packet's
// meta as the server sent it. A result the server marked as an error
// becomes a failed call with its text.
func mapResult(res *sdk.CallToolResult, toolName, title string) (tool.Result, error) {
	if res == nil {
		return tool.Result{}, errors.New("the MCP server returned no result")
	}
	p := evidence.Packet{Kind: evidence.ToolOutput, Title: title, Items: []evidence.Item{}, Meta: evidence.Meta{Source: toolName}}
	var texts []string
	var media []evidence.Item
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			media = append(media, evidence.Item{Label: c.MIMEType, Text: fmt.Sprintf("image, %d bytes (not shown)", len(c.Data))})
		case *sdk.AudioContent:
			media = append(media, evidence.Item{Label: c.MIMEType, Text: fmt.Sprintf("audio, %d bytes (not shown)", len(c.Data))})
		case *sdk.ResourceLink:
			media = append(media, evidence.Item{URL: c.URI, Title: c.Name, Label: c.MIMEType, Text: orElse(c.Description, "a linked resource")})
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				text, _ := clip(r.Text)
				if text == "" {
					text = fmt.Sprintf("%d bytes", len(r.Blob))
				}
				media = append(media, evidence.Item{URL: r.URI, Label: r.MIMEType, Text: text})
			}
		}
	}
	text, cut := clip(strings.Join(texts, "\n"))
	if res.IsError {
		if text == "" {
			text = "the MCP tool reported an error without a message"
		}
		return tool.Result{}, errors.New(text)
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return tool.Result{}, fmt.Errorf("structured content: %w", err)
		}
		p.Meta.Structured = b
		// Servers usually repeat the structured content as text.
		if json.Valid([]byte(text)) {
			text = ""
		}
	}
	if text != "" {
		p.Items = append(p.Items, evidence.Item{Text: text})
	}
	p.Items = append(p.Items, media...)
	p.Meta.Truncated = cut
	return tool.Result{Content: p.Encode()}, nil
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// clip cuts text to maxResultText, saying so; cut reports whether it did.
func clip(s string) (_ string, cut bool) {
	if len(s) <= maxResultText {
		return s, false
	}
	n := maxResultText
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("\n[… %d more bytes cut]", len(s)-n), true
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
