package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reverie-ai/reverie/tool"
)

// maxResultText caps the text of one tool result handed to the model.
const maxResultText = 64 << 10

// resultJSON is a tool result with more than text in it, as the model
// reads it.
type resultJSON struct {
	Text       string          `json:"text,omitempty"`
	Structured json.RawMessage `json:"structured_content,omitempty"`
	Images     []mediaJSON     `json:"images,omitempty"`
	Audio      []mediaJSON     `json:"audio,omitempty"`
	Resources  []resourceJSON  `json:"resources,omitempty"`
}

type mediaJSON struct {
	MIMEType string `json:"mime_type"`
	Bytes    int    `json:"bytes"`
}

type resourceJSON struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
	Text        string `json:"text,omitempty"`
	Bytes       int    `json:"bytes,omitempty"`
	Link        bool   `json:"link,omitempty"`
}

// mapResult turns an MCP tool result into the model's tool result: plain
// text when it is only text; otherwise a JSON object with the text, the
// structured content, and images, audio and resources described by type
// and size (the model cannot see the bytes). A result the server marked as
// an error becomes a failed call with its text.
func mapResult(res *sdk.CallToolResult) (tool.Result, error) {
	if res == nil {
		return tool.Result{}, errors.New("the MCP server returned no result")
	}
	var out resultJSON
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			out.Images = append(out.Images, mediaJSON{MIMEType: c.MIMEType, Bytes: len(c.Data)})
		case *sdk.AudioContent:
			out.Audio = append(out.Audio, mediaJSON{MIMEType: c.MIMEType, Bytes: len(c.Data)})
		case *sdk.ResourceLink:
			out.Resources = append(out.Resources, resourceJSON{URI: c.URI, Name: c.Name, Description: c.Description, MIMEType: c.MIMEType, Link: true})
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				out.Resources = append(out.Resources, resourceJSON{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text, Bytes: len(r.Blob)})
			}
		}
	}
	out.Text = clip(strings.Join(texts, "\n"))
	if res.IsError {
		msg := out.Text
		if msg == "" {
			msg = "the MCP tool reported an error without a message"
		}
		return tool.Result{}, errors.New(msg)
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return tool.Result{}, fmt.Errorf("structured content: %w", err)
		}
		out.Structured = b
		// Servers usually repeat the structured content as text.
		if json.Valid([]byte(out.Text)) {
			out.Text = ""
		}
	}
	if out.Structured == nil && len(out.Images) == 0 && len(out.Audio) == 0 && len(out.Resources) == 0 {
		return tool.Result{Content: out.Text}, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return tool.Result{}, fmt.Errorf("tool result: %w", err)
	}
	return tool.Result{Content: string(b)}, nil
}

// clip cuts text to maxResultText, saying so.
func clip(s string) string {
	if len(s) <= maxResultText {
		return s
	}
	cut := maxResultText
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[… %d more bytes cut]", len(s)-cut)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
